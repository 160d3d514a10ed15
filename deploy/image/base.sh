#!/usr/bin/env bash
# base.sh [--chroot] PACKAGES: makes (or reuses) the image's base without any registry, and prints its
# image name on stdout (progress on stderr). The base is Debian 12 (bookworm) by debootstrap
# --variant=minbase from Debian's mirror, with bookworm-updates and bookworm-security, plus
# PACKAGES (deploy/image/runtime-packages.sh: the binaries' own libraries), without docs, man
# pages or locales (as Debian's -slim images) and without apt's lists.
#
#   $DRACPU_IMAGE_CACHE (default /var/cache/dracpu-image)/
#     bookworm/  bookworm.ready   the chroot and its stamp (tests/debian_chroot.sh: rebuilt when
#                                 PACKAGES change, after DRACPU_IMAGE_MAX_AGE_DAYS (default 30),
#                                 or when it no longer runs)
#
# --chroot: only the chroot; prints its folder (make image's subset where buildah cannot run).
# Otherwise the chroot becomes the buildah image localhost/dracpu-base:bookworm, labelled with a hash of
# the stamp; an image with the current hash is reused as it is. Root and debootstrap (make image
# installs it); Debian's mirror the first time ($DRACPU_IMAGE_MIRROR, default deb.debian.org).
set -euo pipefail
chroot_only=0
[ "${1:-}" = --chroot ] && chroot_only=1 && shift
[ $# = 1 ] && [ -n "$1" ] || {
  echo "usage: $0 [--chroot] 'PACKAGE...'" >&2
  exit 2
}
packages=$1
CACHE=${DRACPU_IMAGE_CACHE:-/var/cache/dracpu-image}
MIRROR=${DRACPU_IMAGE_MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${DRACPU_IMAGE_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
NAME=localhost/dracpu-base:bookworm
# Bump when what goes into the base changes beyond PACKAGES.
RECIPE="v1 bookworm minbase updates security slim $packages"

DC_NAME="image base" DC_MIRROR=$MIRROR DC_MAX_AGE_DAYS=${DRACPU_IMAGE_MAX_AGE_DAYS:-30}
# shellcheck source=../../tests/debian_chroot.sh
. "$(dirname "$0")/../../tests/debian_chroot.sh"

[ "$(id -u)" = 0 ] || dc_die "needs root (debootstrap, chroot)"
command -v debootstrap >/dev/null || dc_die "debootstrap is not installed (make image installs it)"
mkdir -p "$CACHE"
# One make image at a time builds or commits the base; another waits for it.
exec 9>"$CACHE/lock"
flock 9

# Debian's security and point-release updates, and no docs, man pages or locales (only the
# copyright files stay), as Debian's own -slim images.
dc_configure() {
  local dir=$1 suite=$2
  cat >"$dir/etc/apt/sources.list" <<EOF
deb $MIRROR $suite main
deb $MIRROR $suite-updates main
deb $SECURITY_MIRROR $suite-security main
EOF
  cat >"$dir/etc/dpkg/dpkg.cfg.d/dracpu-slim" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
EOF
  find "$dir/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
  find "$dir/usr/share/doc" -mindepth 1 -type d -empty -delete
  rm -rf "$dir"/usr/share/man/* "$dir"/usr/share/info/* "$dir"/usr/share/locale/*
}

dir=$CACHE/bookworm stamp=$CACHE/bookworm.ready
# ldconfig -p: the dynamic loader and its cache work in the chroot.
if ! dc_fresh bookworm "$dir" "$stamp" "$RECIPE" /sbin/ldconfig -p; then
  dc_reach_mirror bookworm "the image's base is built from it in $CACHE (set DRACPU_IMAGE_MIRROR \
to another Debian mirror, or make image IMAGE_BASE=<registry image> to use a registry's Debian 12)"
  # shellcheck disable=SC2086
  dc_build bookworm bookworm "$dir" "$stamp" "$RECIPE" "$packages" "libc6 $packages"
  rm -rf "$dir"/var/lib/apt/lists/* "$dir"/var/cache/apt/*.bin "$dir"/var/log/apt/* "$dir"/var/log/dpkg.log
fi

if [ "$chroot_only" = 1 ]; then
  echo "$dir"
  exit 0
fi
hash=$(sha256sum "$stamp" | cut -c1-16)
if [ "$(buildah inspect --type image --format '{{index .OCIv1.Config.Labels "io.dracpu.base"}}' "$NAME" 2>/dev/null)" = "$hash" ]; then
  dc_log "reusing $NAME ($hash)"
else
  dc_log "committing $dir as $NAME ($hash)"
  ctr=$(buildah from scratch)
  trap 'buildah rm "$ctr" >/dev/null 2>&1 || true' EXIT
  buildah copy --quiet "$ctr" "$dir/" / >/dev/null
  buildah config --label "io.dracpu.base=$hash" \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --cmd /bin/bash "$ctr"
  buildah commit --quiet --rm "$ctr" "$NAME" >/dev/null
  trap - EXIT
fi
echo "$NAME"
