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
DC_NAME="realrt chroots" DC_MIRROR=$MIRROR DC_MAX_AGE_DAYS=$MAX_AGE_DAYS
# shellcheck source=../debian_chroot.sh
. "$(dirname "$0")/../debian_chroot.sh"
log() { dc_log "$@"; }
die() { dc_die "$@"; }

[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot, mounts)"
command -v debootstrap >/dev/null || die "debootstrap is not installed (make e2e-real installs it)"
mkdir -p "$CACHE"

fresh() {
  dc_fresh "$1" "$CACHE/$1" "$CACHE/$1.ready" "$RECIPE" /usr/bin/containerd --version
}

build() {
  local suite=$1
  dc_reach_mirror "$suite" "the real-runtime suite needs it to build its $suite chroot in $CACHE \
(set DRACPU_REALRT_MIRROR to another Debian mirror)"
  dc_build "$suite" "$suite" "$CACHE/$suite" "$CACHE/$suite.ready" "$RECIPE" "$PACKAGES" \
    "containerd runc busybox-static"
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
