#!/usr/bin/env python3
"""ansi2svg.py < text > out.svg: a terminal screenshot as SVG (16-colour SGR, monospace).

How docs/images/node-map-*.png are made: `make screenshots` runs make demo's node on a synthetic
2-socket 96-CPU tree (tests/e2e/synthetic_sysfs.py ROOT 2 24 2 1); at the demo's first map (both
claims pinned) it keeps
  dracpu-shm map --path SHM --sysfs-root ROOT --color always --width 80   (| ansi2svg.py > t.svg)
  dracpu-shm map --path SHM --sysfs-root ROOT --format svg
and renders both with rsvg-convert.
(rsvg-convert: Debian's librsvg2-bin.)
"""
import html, re, sys
FG = {30: "#000000", 31: "#cd3131", 32: "#0dbc79", 33: "#e5e510", 34: "#2472c8", 35: "#bc3fbc", 36: "#11a8cd",
      37: "#e5e5e5", 90: "#8a8a8a", 97: "#ffffff"}
BG = {40: "#000000", 41: "#cd3131", 42: "#0dbc79", 43: "#e5e510", 44: "#2472c8", 45: "#bc3fbc", 46: "#11a8cd",
      47: "#e5e5e5", 100: "#666666", 102: "#23d18b", 103: "#f5f543", 104: "#3b8eea", 105: "#d670d6", 106: "#29b8db"}
DEFAULT_FG, BACK = "#d4d4d4", "#1e1e1e"
CW, LH, FS = 8.4, 17, 14
lines = sys.stdin.read().rstrip("\n").split("\n")
cols = max(len(re.sub(r"\x1b\[[0-9;]*m", "", l)) for l in lines)
W, H = int(cols * CW + 24), int(len(lines) * LH + 20)
out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d">' % (W, H),
       '<rect width="100%%" height="100%%" fill="%s"/>' % BACK,
       '<g font-family="DejaVu Sans Mono, monospace" font-size="%d" xml:space="preserve">' % FS]
for row, line in enumerate(lines):
    fg, bg, bold, dim, x = DEFAULT_FG, None, False, False, 0
    y = 12 + row * LH
    for part in re.split(r"(\x1b\[[0-9;]*m)", line):
        m = re.fullmatch(r"\x1b\[([0-9;]*)m", part)
        if m:
            for c in [int(v) for v in m.group(1).split(";") if v] or [0]:
                if c == 0: fg, bg, bold, dim = DEFAULT_FG, None, False, False
                elif c == 1: bold = True
                elif c == 2: dim = True
                elif c in FG: fg = FG[c]
                elif c in BG: bg = BG[c]
            continue
        if not part:
            continue
        if bg:
            out.append('<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"/>' % (12 + x * CW, y - 1, len(part) * CW, LH, bg))
        out.append('<text x="%.1f" y="%d" fill="%s"%s%s>%s</text>' % (12 + x * CW, y + 12, fg,
                   ' font-weight="bold"' if bold else "", ' opacity="0.6"' if dim else "", html.escape(part)))
        x += len(part)
out.append("</g></svg>")
print("\n".join(out))
