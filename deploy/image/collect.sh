#!/bin/sh
# collect.sh OUT BINARY...: copies each binary (stripped) to OUT/usr/local/bin and every shared
# library ldd lists for it, with the dynamic loader, at its own path under OUT; adds /tmp and an
# nsswitch.conf; then runs `dracpu-dra-agent version` chrooted in OUT when it is there (needs
# root), so an incomplete tree fails here and not on a node. Used by the Dockerfile's build
# stage and by build-local.sh. Run it on the Debian release the binaries were built on.
set -eu
[ $# -ge 2 ] || { echo "usage: $0 OUT BINARY..." >&2; exit 2; }
out=$1; shift
mkdir -p "$out/usr/local/bin" "$out/tmp" "$out/etc"
libs=$(mktemp)
trap 'rm -f "$libs"' EXIT
for b in "$@"; do
  [ -x "$b" ] || { echo "collect.sh: missing binary $b" >&2; exit 1; }
  install -m 0755 -s "$b" "$out/usr/local/bin/"
  ldd "$b" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' >> "$libs"
  if ldd "$b" | grep -q "not found"; then
    echo "collect.sh: $b has unresolved libraries:" >&2; ldd "$b" | grep "not found" >&2; exit 1
  fi
done
sort -u "$libs" | while read -r lib; do
  mkdir -p "$out$(dirname "$lib")"
  cp -L "$lib" "$out$lib"
done
chmod 1777 "$out/tmp"
printf 'hosts: files dns\n' > "$out/etc/nsswitch.conf"
if [ -x "$out/usr/local/bin/dracpu-dra-agent" ] && [ "$(id -u)" = 0 ]; then
  chroot "$out" /usr/local/bin/dracpu-dra-agent version
fi
echo "collect.sh: $(find "$out" -type f | wc -l) files, $(du -sh "$out" | cut -f1)"
