# Sourced by bash scripts (tests/realrt/chroots.sh, deploy/image/base.sh): makes or reuses a
# Debian chroot, debootstrap --variant=minbase plus some packages from Debian's mirror, in a
# cache folder outside the checkout that survives between runs on one machine and is rebuilt on
# a new one. Nothing fetched is committed.
#
#   <dir>/          the chroot
#   <stamp>         line 1: the recipe (whatever the caller puts in it; a change rebuilds), then
#                   "<package> <version>" of the packages the caller names; a chroot without
#                   it, with another recipe, older than $DC_MAX_AGE_DAYS days or failing the
#                   caller's check command is rebuilt from scratch
#   <dir>.debootstrap.log   what debootstrap and apt printed
#
# The caller sets DC_NAME (message prefix, e.g. "realrt chroots"), DC_MIRROR and DC_MAX_AGE_DAYS
# before calling, and may define dc_configure DIR SUITE, run in the new chroot after debootstrap
# and before apt (sources, dpkg excludes).

DC_APT_OPTS=(-o Acquire::Check-Valid-Until=false -o APT::Install-Recommends=false -q)

dc_log() { echo "$DC_NAME: $*" >&2; }
dc_die() {
  echo "$DC_NAME: ERROR: $*" >&2
  exit 1
}

# dc_reach_mirror SUITE WHAT: fails naming the mirror and WHAT needs it when it cannot be reached.
dc_reach_mirror() {
  local suite=$1 what=$2
  if ! timeout 20 python3 - "$DC_MIRROR/dists/$suite/Release" <<'PY' >/dev/null 2>&1; then
import sys, urllib.request
urllib.request.urlopen(sys.argv[1], timeout=15).read(64)
PY
    dc_die "cannot reach Debian's mirror $DC_MIRROR (dists/$suite/Release): $what"
  fi
}

# dc_unmount_under DIR: unmounts anything left mounted under DIR (a run that was killed),
# deepest first.
dc_unmount_under() {
  local dir
  dir=$(readlink -f "$1")
  awk -v d="$dir" '$5 == d || index($5, d "/") == 1 {print $5}' /proc/self/mountinfo |
    sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
}

# dc_fresh LABEL DIR STAMP RECIPE CHECK...: true when DIR is a finished chroot of RECIPE, young
# enough, in which `chroot DIR CHECK...` succeeds.
dc_fresh() {
  local label=$1 dir=$2 stamp=$3 recipe=$4
  shift 4
  [ -f "$stamp" ] && [ -d "$dir" ] || return 1
  [ "$(sed -n 1p "$stamp")" = "$recipe" ] || {
    dc_log "$label: recipe changed"
    return 1
  }
  if [ -n "$(find "$stamp" -mtime +"$DC_MAX_AGE_DAYS")" ]; then
    dc_log "$label: older than $DC_MAX_AGE_DAYS days"
    return 1
  fi
  chroot "$dir" "$@" >/dev/null 2>&1 || {
    dc_log "$label: '$*' does not run in it"
    return 1
  }
}

# dc_build LABEL SUITE DIR STAMP RECIPE PACKAGES VERSIONS_OF: debootstraps SUITE into DIR.tmp,
# installs PACKAGES (space-separated; their dependencies, no recommends), moves it to DIR and
# writes STAMP (RECIPE, then the versions of the packages in VERSIONS_OF).
dc_build() {
  local label=$1 suite=$2 dir=$3 stamp=$4 recipe=$5 packages=$6 versions_of=$7 start=$SECONDS
  local log=$dir.debootstrap.log
  dc_log "$label: building in $dir (debootstrap $suite from $DC_MIRROR; takes minutes)"
  rm -f "$stamp"
  dc_unmount_under "$dir"
  rm -rf "$dir" "$dir.tmp"
  debootstrap --variant=minbase "$suite" "$dir.tmp" "$DC_MIRROR" >"$log" 2>&1 ||
    dc_die "$label: debootstrap failed (log: $log)"
  # No daemon may start inside the chroot while packages are installed.
  printf '#!/bin/sh\nexit 101\n' >"$dir.tmp/usr/sbin/policy-rc.d"
  chmod +x "$dir.tmp/usr/sbin/policy-rc.d"
  if declare -F dc_configure >/dev/null; then dc_configure "$dir.tmp" "$suite"; fi
  chroot "$dir.tmp" apt-get "${DC_APT_OPTS[@]}" update >>"$log" 2>&1 ||
    dc_die "$label: apt-get update in the chroot failed (log: $log)"
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive chroot "$dir.tmp" apt-get "${DC_APT_OPTS[@]}" -y upgrade \
    >>"$log" 2>&1 || dc_die "$label: apt-get upgrade in the chroot failed (log: $log)"
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive chroot "$dir.tmp" apt-get "${DC_APT_OPTS[@]}" install -y $packages \
    >>"$log" 2>&1 || dc_die "$label: installing $packages failed (log: $log)"
  chroot "$dir.tmp" apt-get clean
  mv "$dir.tmp" "$dir"
  {
    echo "$recipe"
    # shellcheck disable=SC2086
    chroot "$dir" dpkg-query -W -f='${Package} ${Version}\n' $versions_of
  } >"$stamp"
  dc_log "$label: ready in $((SECONDS - start)) s"
}
