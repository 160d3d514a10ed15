#!/usr/bin/env bash
# runtime-packages.sh BINARY...: prints, one a line and sorted, the Debian packages that ship
# the shared libraries the binaries link directly (their ELF NEEDED entries, resolved to files
# by ldd, the files to packages by dpkg -S); apt brings what those libraries need in turn. Run
# it on the Debian release the binaries were built on: deploy/image/base.sh installs exactly
# these in the image's base. Fails naming the binary and the library when one is not found or
# belongs to no package (a library built by hand cannot go into the image this way).
set -euo pipefail
[ $# -ge 1 ] || {
  echo "usage: $0 BINARY..." >&2
  exit 2
}

# A file dpkg knows under /lib or under /usr/lib (Debian 12 is merged-/usr; packages list
# either path).
owner() {
  local f=$1 alt
  case $f in
    /usr/*) alt=${f#/usr} ;;
    *) alt=/usr$f ;;
  esac
  { dpkg -S "$f" 2>/dev/null || dpkg -S "$alt" 2>/dev/null || dpkg -S "$(readlink -f "$f")" 2>/dev/null; } |
    head -1 | cut -d: -f1
}

for b in "$@"; do
  [ -x "$b" ] || {
    echo "runtime-packages.sh: $b is not an executable" >&2
    exit 1
  }
  resolved=$(ldd "$b")
  for lib in $(readelf -d "$b" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    # "name => path (addr)", or "path (addr)" for the dynamic loader.
    path=$(awk -v l="$lib" '$1 == l && $2 == "=>" {print $3}
      $1 ~ /^\// && substr($1, length($1) - length(l)) == "/" l {print $1}' <<<"$resolved" | head -1)
    [ -n "$path" ] && [ "$path" != "not" ] || {
      echo "runtime-packages.sh: $b needs $lib, which ldd does not find" >&2
      exit 1
    }
    pkg=$(owner "$path")
    [ -n "$pkg" ] || {
      echo "runtime-packages.sh: $b needs $path, which no Debian package ships" >&2
      exit 1
    }
    echo "$pkg"
  done
done | sort -u
