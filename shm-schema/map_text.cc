#include "shm-schema/map_text.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <vector>

#include "shm-schema/map_layout.h"
#include "shm-schema/text_canvas.h"

namespace dracpu::shm {
namespace {

constexpr int kMinWidth = 40;
constexpr int kAutoThreadsMaxCpus = 256;

// Styles of canvas cells; owners are kOwnerBase + owner index.
constexpr int kPlain = TextCanvas::kPlain;
constexpr int kBorder = 1;
constexpr int kTitle = 2;
constexpr int kLabel = 3;
constexpr int kOwnerBase = 16;

// 16-colour SGR parameters: claims get a background each, in glyph order.
constexpr const char* kClaimPalette[] = {"97;44",  "30;42",  "97;45",  "30;46",  "30;43", "30;104",
                                         "30;102", "30;105", "30;106", "30;103", "97;100"};

std::string OwnerSgr(const MapOwner& o) {
  switch (o.use) {
    case CpuUse::kClaim:
      return kClaimPalette[static_cast<size_t>(o.color) % std::size(kClaimPalette)];
    case CpuUse::kConflict:
      return "1;97;41";
    case CpuUse::kReserved:
      return "1;33";
    case CpuUse::kShared:
      return "32";
    case CpuUse::kIsolated:
      return "35";
    case CpuUse::kOffline:
      return "90";
    case CpuUse::kUnassigned:
    case CpuUse::kUnknown:
      return "2";
  }
  return "";
}

int Digits(int v) {
  int d = 1;
  while (v >= 10) {
    v /= 10;
    ++d;
  }
  return d;
}

// Geometry and painting of the boxes (one column per character, one line per text row).
//
// A leaf, for the layout, is a box drawn without boxes inside: in the threads view a box of
// cores; in the cores view also a box whose children are all boxes of cores, drawn as a table
// with one row per child (its title, a glyph per core, its CPUs per owner).
class BoxPainter {
 public:
  BoxPainter(const NodeMap& map, bool threads_view, bool ascii)
      : map_(map), threads_view_(threads_view), ascii_(ascii) {}

  // Boxes whose cores are single CPUs listed by id (the "not online" box) use the threads view.
  void ForceThreads(const MapBox* box) { forced_ = box; }

  BoxMetrics Metrics() const {
    BoxMetrics m;
    m.is_leaf = [this](const MapBox& b) { return IsLeaf(b); };
    m.title_width = [this](const MapBox& b) { return Columns(Title(b)) + 6; };
    m.leaf_width = [this](const MapBox& b) { return LeafNatural(b); };
    m.leaf_height = [this](const MapBox& b, int cw) { return LeafPaint(b, cw, nullptr, 0, 0); };
    return m;
  }

  void Paint(const PlacedBox& p, TextCanvas& canvas) const {
    const MapBox& b = *p.box;
    const std::string_view h = ascii_ ? "-" : "─";
    const std::string_view v = ascii_ ? "|" : "│";
    const int bottom = p.y + p.h - 1;
    canvas.Put(p.x, p.y, ascii_ ? "+" : "┌", kBorder);
    canvas.Put(p.x + p.w - 1, p.y, ascii_ ? "+" : "┐", kBorder);
    canvas.Put(p.x, bottom, ascii_ ? "+" : "└", kBorder);
    canvas.Put(p.x + p.w - 1, bottom, ascii_ ? "+" : "┘", kBorder);
    for (int x = p.x + 1; x < p.x + p.w - 1; ++x) {
      canvas.Put(x, p.y, h, kBorder);
      canvas.Put(x, bottom, h, kBorder);
    }
    for (int y = p.y + 1; y < bottom; ++y) {
      canvas.Put(p.x, y, v, kBorder);
      canvas.Put(p.x + p.w - 1, y, v, kBorder);
    }
    if (p.w >= 7) canvas.Put(p.x + 2, p.y, " " + Truncate(Title(b), p.w - 6, ascii_) + " ", kTitle);
    if (!IsLeaf(b)) {
      for (const auto& k : p.kids) Paint(k, canvas);
      return;
    }
    LeafPaint(b, p.w - 4, &canvas, p.x + 2, p.y + 1);
  }

 private:
  bool Threads(const MapBox& b) const { return threads_view_ || &b == forced_; }

  bool IsLeaf(const MapBox& b) const {
    if (b.children.empty()) return true;
    if (Threads(b)) return false;
    return std::all_of(b.children.begin(), b.children.end(),
                       [](const MapBox& k) { return k.children.empty(); });
  }

  std::string Glyph(int owner) const {
    return std::string(1, map_.owners[static_cast<size_t>(owner)].glyph);
  }

  std::string Join(const std::vector<std::string>& parts) const {
    std::string t;
    for (const auto& part : parts) t += (t.empty() ? "" : (ascii_ ? " / " : " · ")) + part;
    return t;
  }

  std::string Title(const MapBox& b) const {
    std::string t = Join(b.title);
    if (!IsLeaf(b)) return t;
    int p = 0;
    int e = 0;
    for (const auto& c : b.cores) {
      p += c.type == CoreType::kPerformance;
      e += c.type == CoreType::kEfficiency;
    }
    std::vector<std::string> suffix;
    if (!Threads(b)) suffix.push_back(std::to_string(b.core_count) + " cores");
    if (p + e > 0) suffix.push_back(std::to_string(p) + " P + " + std::to_string(e) + " E");
    if (suffix.empty()) return t;
    return Join({t, Join(suffix)});
  }

  int CellWidth(const MapBox& b) const {
    int w = 1;
    for (const auto& c : b.cores) {
      w = std::max({w, Digits(c.id), static_cast<int>(c.threads.size())});
    }
    return w;
  }

  // "A 4  . 12": the CPUs of each owner in `b`, two spaces apart.
  int CountsWidth(const MapBox& b) const {
    int w = -2;
    for (const auto& [owner, n] : OwnerCounts(b)) w += 2 + 2 + Digits(n);
    return std::max(0, w);
  }

  int LabelWidth(const MapBox& table) const {
    int w = 0;
    for (const auto& k : table.children) w = std::max(w, Columns(Join(k.title)));
    return w;
  }

  int LeafNatural(const MapBox& b) const {
    const int n = static_cast<int>(b.cores.size());
    if (Threads(b)) return std::max(1, n * (CellWidth(b) + 1) - 1);
    if (b.children.empty()) return std::max({1, n, CountsWidth(b)});
    int w = 1;
    const int label = LabelWidth(b);
    for (const auto& k : b.children) {
      w = std::max(w, label + 1 + static_cast<int>(k.cores.size()) + 2 + CountsWidth(k));
    }
    return w;
  }

  // Lays out a leaf's content in `cw` columns and returns its height; with a canvas, also paints
  // it with its top-left corner at (x0, y0).
  int LeafPaint(const MapBox& b, int cw, TextCanvas* canvas, int x0, int y0) const {
    if (Threads(b)) return ThreadCells(b, cw, canvas, x0, y0);
    if (b.children.empty()) {
      const int strip = CoreStrip(b, cw, canvas, x0, y0);
      return strip + Counts(b, cw, canvas, x0, y0 + strip);
    }
    // A table: label, strip and counts on one line when they fit; else the counts (and a strip
    // too long for the line) continue under the strip.
    const int label = LabelWidth(b);
    int y = 0;
    for (const auto& k : b.children) {
      if (canvas != nullptr) canvas->Put(x0, y0 + y, Join(k.title), kLabel);
      const int sx = label + 1;
      const int strip_w = std::max(1, cw - sx);
      const int strip = CoreStrip(k, strip_w, canvas, x0 + sx, y0 + y);
      const int n = static_cast<int>(k.cores.size());
      if (strip == 1 && sx + n + 2 + CountsWidth(k) <= cw) {
        Counts(k, cw - sx - n - 2, canvas, x0 + sx + n + 2, y0 + y);
        y += 1;
      } else {
        y += strip + Counts(k, strip_w, canvas, x0 + sx, y0 + y + strip);
      }
    }
    return std::max(1, y);
  }

  int ThreadCells(const MapBox& b, int cw, TextCanvas* canvas, int x0, int y0) const {
    const int n = static_cast<int>(b.cores.size());
    const int cell = CellWidth(b);
    const int per_row = std::max(1, (cw + 1) / (cell + 1));
    for (int i = 0; canvas != nullptr && i < n; ++i) {
      const MapCore& c = b.cores[static_cast<size_t>(i)];
      const int x = x0 + (i % per_row) * (cell + 1);
      const int y = y0 + 2 * (i / per_row);
      canvas->Put(x, y, std::to_string(c.id), kLabel);
      for (size_t t = 0; t < c.threads.size(); ++t) {
        const int owner = c.threads[t].owner;
        canvas->Put(x + static_cast<int>(t), y + 1, Glyph(owner), kOwnerBase + owner);
      }
    }
    return 2 * std::max(1, (n + per_row - 1) / per_row);
  }

  // One glyph per core, wrapped at `cw`; returns the lines used.
  int CoreStrip(const MapBox& b, int cw, TextCanvas* canvas, int x0, int y0) const {
    const int n = static_cast<int>(b.cores.size());
    const int per_row = std::max(1, cw);
    for (int i = 0; canvas != nullptr && i < n; ++i) {
      const int owner = CoreOwner(b.cores[static_cast<size_t>(i)]);
      canvas->Put(x0 + i % per_row, y0 + i / per_row, Glyph(owner), kOwnerBase + owner);
    }
    return std::max(1, (n + per_row - 1) / per_row);
  }

  // The CPUs per owner (claims without a glyph of their own added up under '*').
  std::vector<std::pair<int, int>> OwnerCounts(const MapBox& b) const {
    std::vector<std::pair<int, int>> out;
    int overflow = -1;
    for (const auto& [owner, n] : b.owner_cpus) {
      if (map_.owners[static_cast<size_t>(owner)].glyph == ClaimGlyphs::kOverflow) {
        if (overflow >= 0) {
          out[static_cast<size_t>(overflow)].second += n;
          continue;
        }
        overflow = static_cast<int>(out.size());
      }
      out.emplace_back(owner, n);
    }
    return out;
  }

  // The CPUs per owner, wrapped at `cw`; returns the lines used.
  int Counts(const MapBox& b, int cw, TextCanvas* canvas, int x0, int y0) const {
    int line = 0;
    int x = 0;
    for (const auto& [owner, n] : OwnerCounts(b)) {
      const std::string text = std::to_string(n);
      const int w = 2 + Columns(text);
      if (x > 0 && x + 2 + w > cw) {
        ++line;
        x = 0;
      } else if (x > 0) {
        x += 2;
      }
      if (canvas != nullptr) {
        canvas->Put(x0 + x, y0 + line, Glyph(owner), kOwnerBase + owner);
        canvas->Put(x0 + x + 2, y0 + line, text, kPlain);
      }
      x += w;
    }
    return line + 1;
  }

  // The owner a core shows in the cores view: a claim (or conflict) on any thread, else the
  // owner of most of its threads.
  int CoreOwner(const MapCore& c) const {
    std::map<int, int> n;
    for (const auto& t : c.threads) {
      const CpuUse use = map_.owners[static_cast<size_t>(t.owner)].use;
      if (use == CpuUse::kClaim || use == CpuUse::kConflict) return t.owner;
      ++n[t.owner];
    }
    int best = c.threads.empty() ? 0 : c.threads.front().owner;
    for (const auto& [owner, count] : n) {
      if (count > n[best]) best = owner;
    }
    return best;
  }

  const NodeMap& map_;
  bool threads_view_;
  bool ascii_;
  const MapBox* forced_ = nullptr;
};

// A legend entry: the owner and its CPUs, then what it is (`claims_sharing` > 1: that many claims
// without a glyph of their own, shown as one entry).
struct LegendEntry {
  std::string head;
  std::string detail;
};

LegendEntry Legend(const MapOwner& o, int claims_sharing) {
  LegendEntry e;
  e.head =
      claims_sharing > 1 ? std::to_string(claims_sharing) + " more claims (no glyph)" : o.label;
  const int n = o.cpus.Count();
  const std::string cpus = o.cpus.ToListString();
  e.head +=
      "  " + std::to_string(n) + (n == 1 ? " CPU" : " CPUs") + (cpus.empty() ? "" : ": ") + cpus;
  e.detail = claims_sharing > 1 ? "(dracpu-shm dump lists them)" : o.detail;
  return e;
}

}  // namespace

MapView ResolveView(const NodeMap& map, MapView view) {
  if (view != MapView::kAuto) return view;
  return map.online_cpus <= kAutoThreadsMaxCpus ? MapView::kThreads : MapView::kCores;
}

std::string RenderMapText(const NodeMap& map, const TextMapOptions& options) {
  const int width = std::max(options.width, kMinWidth);
  const bool ascii = options.ascii;
  auto styled = [&options](const std::string& text, const std::string& sgr) {
    return options.color && !sgr.empty() ? "\x1b[" + sgr + "m" + text + "\x1b[0m" : text;
  };
  auto fix = [ascii](std::string s) { return ascii ? ReplaceAll(std::move(s), "·", "-") : s; };
  std::string out;
  auto lines = [&](const std::string& text, int indent) {
    for (const auto& l : Wrap(fix(text), width, indent)) out += l + "\n";
  };

  std::string head = "node " + (map.node_name.empty() ? std::string("?") : map.node_name) + " · " +
                     std::to_string(map.online_cpus) + " CPUs online";
  if (map.have_segment) head += " · generation " + std::to_string(map.generation);
  for (const auto& l : Wrap(fix(head), width, 2)) out += styled(l, "1") + "\n";
  if (!map.agents.empty()) lines(map.agents, 2);

  // Boxes: sockets flow across the width at their natural size.
  const bool threads = ResolveView(map, options.view) == MapView::kThreads;
  BoxPainter painter(map, threads, ascii);
  MapBox outside;
  if (!map.outside.empty()) {
    outside.title = {"not online or not in the topology"};
    for (const auto& t : map.outside) {
      outside.cores.push_back({t.cpu, CoreType::kStandard, {t}});
      ++outside.owner_cpus[t.owner];
    }
    painter.ForceThreads(&outside);
  }
  std::vector<const MapBox*> tops;
  for (const auto& s : map.sockets) tops.push_back(&s);
  if (!map.outside.empty()) tops.push_back(&outside);
  const NodeLayout layout = LayoutNode(tops, 0, 0, width, painter.Metrics());
  TextCanvas canvas(width);
  for (const auto& p : layout.boxes) painter.Paint(p, canvas);
  std::vector<std::string> sgr = {"", "2", "1", "2"};
  sgr.resize(kOwnerBase);
  for (const auto& o : map.owners) sgr.push_back(OwnerSgr(o));
  canvas.Render(sgr, options.color, out);

  // Legend: one entry per owner (claims without a glyph of their own in one entry).
  int overflow = 0;
  CpuSet overflow_cpus;
  for (const auto& o : map.owners) {
    if (o.use == CpuUse::kClaim && o.glyph == ClaimGlyphs::kOverflow) {
      ++overflow;
      overflow_cpus |= o.cpus;
    }
  }
  bool overflow_done = false;
  // One line when it fits; else the detail on lines of its own under the owner and CPUs.
  auto entry = [&](const MapOwner& o, const LegendEntry& e) {
    const std::string glyph = styled(std::string(1, o.glyph), OwnerSgr(o)) + "  ";
    const std::string one = fix(e.head + (e.detail.empty() ? "" : "  " + e.detail));
    std::vector<std::string> wrapped;
    if (Columns(one) <= width - 3) {
      wrapped = {one};
    } else {
      wrapped = Wrap(fix(e.head), width - 3, 2);
      if (!e.detail.empty()) {
        for (auto& l : Wrap(fix(e.detail), width - 5, 0)) wrapped.push_back("  " + l);
      }
    }
    for (size_t i = 0; i < wrapped.size(); ++i) out += (i == 0 ? glyph : "   ") + wrapped[i] + "\n";
  };
  for (const auto& o : map.owners) {
    const bool is_overflow = o.use == CpuUse::kClaim && o.glyph == ClaimGlyphs::kOverflow;
    if (is_overflow && overflow > 1) {
      if (overflow_done) continue;
      overflow_done = true;
      MapOwner all = o;
      all.cpus = overflow_cpus;
      entry(o, Legend(all, overflow));
      continue;
    }
    entry(o, Legend(o, 1));
  }
  if (threads) {
    lines("(each cell: the core's lowest CPU above one glyph per thread, in CPU order)", 1);
  } else {
    lines("(one glyph per core: its claim if any thread is claimed; then CPUs per owner)", 1);
  }
  for (const auto& n : map.notes) lines("note: " + n, 6);
  return out;
}

}  // namespace dracpu::shm
