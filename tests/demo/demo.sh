#!/usr/bin/env bash
# make demo: for now, what dracpu sees of a machine's CPUs (the gatherinfo summary).
#   make demo                      this machine (/sys)
#   make demo MACHINE=<name>       a real machine of ../shared/sysfs-corpus, extracted to a temp
#                                  dir that is removed on exit or Ctrl-C
#   make demo SYSFS_ROOT=<dir>     any tree holding <dir>/sys/...
set -euo pipefail
build=${1:-build}
agent="$build/dra-agent/dracpu-dra-agent"
machine=${MACHINE:-}
root=${SYSFS_ROOT:-/}
if [ -n "$machine" ] && [ -n "${SYSFS_ROOT:-}" ]; then
  echo "demo: give MACHINE or SYSFS_ROOT, not both" >&2
  exit 2
fi

if [ -n "$machine" ]; then
  shared=${DRACPU_SHARED_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/../shared}
  corpus="$shared/sysfs-corpus"
  tarball="$corpus/$machine/tree.tar.gz"
  if [ ! -f "$tarball" ]; then
    echo "demo: no machine \"$machine\" in $corpus; one of:" >&2
    for d in "$corpus"/*/tree.tar.gz; do
      [ -f "$d" ] && echo "  $(basename "$(dirname "$d")")" >&2
    done
    exit 2
  fi
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/dracpu-demo-XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  trap 'exit 130' INT TERM
  tar -xzf "$tarball" -C "$tmp"
  root=$tmp
  echo "Corpus machine $machine ($(grep -o '"notes": "[^"]*' "$corpus/$machine/source.json" \
    | cut -d'"' -f4 | cut -c1-100))"
  echo
fi

"$agent" gatherinfo --sysfs-root "$root" --format summary
echo
shown=$root
[ -n "$machine" ] && shown="<extracted tree of $machine>"
echo "Full report: $agent gatherinfo --sysfs-root $shown [--format json]"
