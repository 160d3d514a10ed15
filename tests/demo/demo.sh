#!/usr/bin/env bash
# make demo: a whole node run locally against simulators (tests/demo/node_demo.py tells the story).
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

shared=${DRACPU_SHARED_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/../shared}
corpus="$shared/sysfs-corpus"
label="this machine (/sys)"
[ -n "${SYSFS_ROOT:-}" ] && label="the sysfs tree at $root"
# A node with too few CPUs cannot show two claims and a shared pool; use a recorded 2-socket
# machine instead, and say so.
if [ -z "$machine" ] && [ -z "${SYSFS_ROOT:-}" ]; then
  online=$("$agent" gatherinfo --format json | python3 -c 'import json,sys; t=json.load(sys.stdin)["topology"]; print(len(t["cpus"]))')
  if [ "$online" -lt 8 ] && [ -d "$corpus" ]; then
    echo "This machine has $online online CPUs, too few to show two exclusive claims beside a shared"
    echo "pool; the demo uses a recorded machine instead (make demo MACHINE=<name> picks another)."
    machine=intel-skylake-sp-2s-ht-pci
  fi
fi

tmp=""
cleanup() { [ -n "$tmp" ] && rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
if [ -n "$machine" ]; then
  tarball="$corpus/$machine/tree.tar.gz"
  if [ ! -f "$tarball" ]; then
    echo "demo: no machine \"$machine\" in $corpus; one of:" >&2
    for d in "$corpus"/*/tree.tar.gz; do
      [ -f "$d" ] && echo "  $(basename "$(dirname "$d")")" >&2
    done
    exit 2
  fi
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/dracpu-demo-tree-XXXXXX")
  tar -xzf "$tarball" -C "$tmp"
  root=$tmp
  label="recorded machine $machine ($(grep -o '"notes": "[^"]*' "$corpus/$machine/source.json" \
    | cut -d'"' -f4 | cut -c1-90))"
fi

python3 "$(dirname "$0")/node_demo.py" "$build" "$root" "$label"
