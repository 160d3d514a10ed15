#!/usr/bin/env bash
# make demo: a whole node run locally against simulators (tests/demo/node_demo.py tells the story).
#   make demo                      this machine (/sys); real processes pinned when its CPUs allow
#   make demo MACHINE=<name>       a recorded machine of ../shared/sysfs-corpus, extracted into the
#                                  demo's temp dir (removed on exit, Ctrl-C or SIGTERM)
#   make demo SYSFS_ROOT=<dir>     any tree holding <dir>/sys/...
#   make demo RUNTIME=containerd   the same story on real containerd (tests/demo/containerd_demo.py;
#                                  root, this machine's sysfs; RUNTIME_SUITE=trixie for 1.7.24)
set -euo pipefail
build=${1:-build}
case "${RUNTIME:-}" in
  "" | sim) ;;
  containerd) exec /usr/bin/python3 "$(dirname "$0")/containerd_demo.py" "$build" ;;
  *) echo "demo: RUNTIME is sim (default) or containerd, not \"$RUNTIME\"" >&2; exit 2 ;;
esac
machine=${MACHINE:-}
if [ -n "$machine" ] && [ -n "${SYSFS_ROOT:-}" ]; then
  echo "demo: give MACHINE or SYSFS_ROOT, not both" >&2
  exit 2
fi
shared=${DRACPU_SHARED_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/../shared}
export DRACPU_SHARED_DIR=$shared
if [ -n "$machine" ]; then
  corpus="$shared/sysfs-corpus"
  if [ ! -f "$corpus/$machine/tree.tar.gz" ]; then
    echo "demo: no machine \"$machine\" in $corpus; one of:" >&2
    for d in "$corpus"/*/tree.tar.gz; do
      [ -f "$d" ] && echo "  $(basename "$(dirname "$d")")" >&2
    done
    exit 2
  fi
  exec python3 "$(dirname "$0")/node_demo.py" "$build" --machine "$machine"
fi
# exec: the demo gets SIGINT/SIGTERM itself and cleans up everything it started.
exec python3 "$(dirname "$0")/node_demo.py" "$build" --sysfs-root "${SYSFS_ROOT:-/}"
