#!/usr/bin/env bash
# The dracpu-dra-agent binary end to end: the gatherinfo subcommand is registered, reads a corpus
# tree given by --sysfs-root, prints JSON with the contract keys; usage errors exit 2; the agent
# mode refuses to start without cluster access.
# Args: <dracpu-dra-agent> ; env DRACPU_SHARED_DIR. Exit 77 (skip) when ../shared is absent.
set -euo pipefail
agent=$1
shared=${DRACPU_SHARED_DIR:-}
fail() { echo "FAIL: $*" >&2; exit 1; }

# Without a subcommand the binary is the agent: outside a pod and without --kubeconfig it must
# refuse to start, say why, and exit 1; an unknown flag is a usage error (2).
rc=0; err=$(env -u KUBERNETES_SERVICE_HOST "$agent" --node-name n --shm-path /nonexistent/x 2>&1) || rc=$?
[ "$rc" -eq 1 ] || fail "agent without cluster config exited $rc, want 1"
grep -q -- "--kubeconfig" <<<"$err" || fail "agent without cluster config did not name --kubeconfig: $err"
rc=0; "$agent" --no-such-flag >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "unknown flag exited $rc, want 2"
rc=0; err=$("$agent" gatherinfo --format xml 2>&1 >/dev/null) || rc=$?
[ "$rc" -eq 2 ] || fail "bad --format exited $rc, want 2"
grep -q -- "--format must be yaml, json or summary" <<<"$err" || fail "bad --format message: $err"
"$agent" help | grep -q "gatherinfo" || fail "gatherinfo missing from usage"

if [ -z "$shared" ] || [ ! -d "$shared/sysfs-corpus" ]; then
  echo "../shared (DRACPU_SHARED_DIR) is absent: corpus part skipped"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar -xzf "$shared/sysfs-corpus/amd-magnycours-4s-8numa-sparse/tree.tar.gz" -C "$tmp"
"$agent" gatherinfo --sysfs-root "$tmp" --format json --no-agent >"$tmp/out.json"
python3 - "$tmp/out.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
t = d["topology"]
assert d["layoutVersion"] == "v1", d["layoutVersion"]
for k in ["online", "offline", "present", "isolated", "smtEnabled", "threadsPerCore", "packages",
          "dies", "clusters", "numaNodes", "l3Caches", "l2Caches", "cores", "cpus", "pcieRoots"]:
    assert k in t, k
assert t["online"] == "0-47", t["online"]
assert [n["id"] for n in t["numaNodes"]] == [0, 1, 2, 33, 34, 45, 72, 73], t["numaNodes"]
assert t["numaNodes"][3]["cpus"] == "18-23"
assert len(t["numaNodes"][0]["distances"]) == 8
# core_id repeats inside a package on Magny-Cours: 48 one-thread cores, never merged.
assert len(t["cores"]) == 48 and t["threadsPerCore"] == 1
assert [p["cpus"] for p in t["packages"]] == ["0-11", "12-23", "24-35", "36-47"]
assert len(t["l3Caches"]) == 8 and len(t["cpus"]) == 48
assert t["cpus"][20]["numaNode"] == 33 and t["cpus"][20]["core"] == 20
print("gatherinfo CLI contract OK")
PY
