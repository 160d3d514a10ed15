#!/usr/bin/env bash
# Makes (or reuses) the Debian chroots the real-runtime suite runs containerd from, and the CRI
# api.proto, in a cache folder outside the checkout that survives between runs on one machine:
#
#   $DRACPU_REALRT_CACHE (default /var/cache/dracpu-realrt)/
#     trixie/  sid/         debootstrap --variant=minbase + containerd, runc, busybox-static
#     <suite>.ready          the recipe hash and the installed versions; a chroot without it, with
#                            another recipe, older than DRACPU_REALRT_MAX_AGE_DAYS (default 30) or
#                            whose containerd no longer runs is rebuilt from scratch
#     cri-api/api.proto      CRI's own proto, from sid's golang-k8s-cri-api-dev (unpacked, not
#                            installed)
#
# Everything comes from Debian's mirror ($DRACPU_REALRT_MIRROR, default the host's
# deb.debian.org); nothing is committed. A machine that cannot reach the mirror fails here with a
# message that says so. Needs root and debootstrap (the Makefile's e2e-real installs it).
#
# Usage: chroots.sh [SUITE...]   (default: trixie sid). Prints "<suite> <dir> <containerd version>"
# per suite on stdout; progress goes to stderr.
set -euo pipefail

CACHE=${DRACPU_REALRT_CACHE:-/var/cache/dracpu-realrt}
MIRROR=${DRACPU_REALRT_MIRROR:-http://deb.debian.org/debian}
MAX_AGE_DAYS=${DRACPU_REALRT_MAX_AGE_DAYS:-30}
PACKAGES="containerd runc busybox-static ca-certificates"
# Bump when what goes into a chroot changes: every cached chroot is then rebuilt.
RECIPE="v1 minbase $PACKAGES"
APT_OPTS=(-o Acquire::Check-Valid-Until=false -o APT::Install-Recommends=false -q)

log() { echo "realrt chroots: $*" >&2; }
die() { echo "realrt chroots: ERROR: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot, mounts)"
command -v debootstrap >/dev/null || die "debootstrap is not installed (make e2e-real installs it)"
mkdir -p "$CACHE"

reach_mirror() {
  local suite=$1
  if ! timeout 20 python3 - "$MIRROR/dists/$suite/Release" <<'PY' >/dev/null 2>&1; then
import sys, urllib.request
urllib.request.urlopen(sys.argv[1], timeout=15).read(64)
PY
    die "cannot reach Debian's mirror $MIRROR (dists/$suite/Release): the real-runtime suite \
needs it to build its $suite chroot in $CACHE (set DRACPU_REALRT_MIRROR to another Debian mirror)"
  fi
}

# Unmounts anything left mounted under $1 (a run that was killed), deepest first.
unmount_under() {
  local dir
  dir=$(readlink -f "$1")
  awk -v d="$dir" '$5 == d || index($5, d "/") == 1 {print $5}' /proc/self/mountinfo |
    sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
}

fresh() {
  local suite=$1 dir=$CACHE/$1 stamp=$CACHE/$1.ready
  [ -f "$stamp" ] && [ -x "$dir/usr/bin/containerd" ] || return 1
  [ "$(sed -n 1p "$stamp")" = "$RECIPE" ] || { log "$suite: recipe changed"; return 1; }
  if [ -n "$(find "$stamp" -mtime +"$MAX_AGE_DAYS")" ]; then
    log "$suite: older than $MAX_AGE_DAYS days"
    return 1
  fi
  chroot "$dir" /usr/bin/containerd --version >/dev/null 2>&1 || { log "$suite: containerd does not run"; return 1; }
}

build() {
  local suite=$1 dir=$CACHE/$1 stamp=$CACHE/$1.ready start=$SECONDS
  reach_mirror "$suite"
  log "$suite: building in $dir (debootstrap from $MIRROR; takes minutes)"
  rm -f "$stamp"
  unmount_under "$dir"
  rm -rf "$dir" "$dir.tmp"
  debootstrap --variant=minbase "$suite" "$dir.tmp" "$MIRROR" >"$CACHE/$suite.debootstrap.log" 2>&1 ||
    die "$suite: debootstrap failed (log: $CACHE/$suite.debootstrap.log)"
  # No daemon may start inside the chroot while packages are installed.
  printf '#!/bin/sh\nexit 101\n' >"$dir.tmp/usr/sbin/policy-rc.d"
  chmod +x "$dir.tmp/usr/sbin/policy-rc.d"
  chroot "$dir.tmp" apt-get "${APT_OPTS[@]}" update >>"$CACHE/$suite.debootstrap.log" 2>&1 ||
    die "$suite: apt-get update in the chroot failed (log: $CACHE/$suite.debootstrap.log)"
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive chroot "$dir.tmp" apt-get "${APT_OPTS[@]}" install -y $PACKAGES \
    >>"$CACHE/$suite.debootstrap.log" 2>&1 ||
    die "$suite: installing $PACKAGES failed (log: $CACHE/$suite.debootstrap.log)"
  chroot "$dir.tmp" apt-get clean
  mv "$dir.tmp" "$dir"
  {
    echo "$RECIPE"
    chroot "$dir" dpkg-query -W -f='${Package} ${Version}\n' containerd runc busybox-static
  } >"$stamp"
  log "$suite: ready in $((SECONDS - start)) s"
}

# CRI's api.proto from sid's golang-k8s-cri-api-dev, unpacked next to the chroots.
cri_proto() {
  local out=$CACHE/cri-api proto=usr/share/gocode/src/k8s.io/cri-api/pkg/apis/runtime/v1/api.proto
  [ -s "$out/api.proto" ] && [ "$out/api.proto" -nt "$CACHE/sid.ready" ] && return 0
  log "cri-api: fetching golang-k8s-cri-api-dev in the sid chroot"
  rm -rf "$out" && mkdir -p "$out/deb"
  local sid=$CACHE/sid
  rm -f "$sid"/tmp/golang-k8s-cri-api-dev_*.deb
  chroot "$sid" sh -c 'cd /tmp && apt-get -o Acquire::Check-Valid-Until=false -q download golang-k8s-cri-api-dev' \
    >"$out/download.log" 2>&1 || die "cri-api: apt-get download golang-k8s-cri-api-dev failed (log: $out/download.log)"
  dpkg-deb -x "$sid"/tmp/golang-k8s-cri-api-dev_*.deb "$out/deb"
  rm -f "$sid"/tmp/golang-k8s-cri-api-dev_*.deb
  [ -s "$out/deb/$proto" ] || die "cri-api: $proto not in golang-k8s-cri-api-dev"
  cp "$out/deb/$proto" "$out/api.proto"
  rm -rf "$out/deb"
}

suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(trixie sid)
for s in "${suites[@]}"; do
  fresh "$s" || build "$s"
done
for s in "${suites[@]}"; do
  [ "$s" = sid ] && cri_proto
done
for s in "${suites[@]}"; do
  echo "$s $CACHE/$s containerd $(awk '$1 == "containerd" {print $2}' "$CACHE/$s.ready")"
done
