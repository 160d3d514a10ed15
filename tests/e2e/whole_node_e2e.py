#!/usr/bin/env python3
"""Both real agents on one simulated node (tests/e2e/whole_node.py): the smoke test.

The dra-agent prepares a claim through the kubelet simulator; the nri-agent, the plugin of the
runtime simulator (--control), pins the claim's container to the claim's CPUs and every other
container to the shared pool, refuses a forged DRA_CPUSET env and a second container on an
exclusive claim, survives a SIGKILL and restart without touching running containers, grows
the shared pool back once the claim is released (the runtime reports NRI v0.12.1, so the
nri-agent widens running containers unsolicited) and resynchronizes after a runtime restart.
dracpu-shm verify passes at the end.

Usage: whole_node_e2e.py BUILD_DIR   (env DRACPU_SHARED_DIR). Exit 77 = skipped (no ../shared).
"""
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from node_common import Fail, check  # noqa: E402
from whole_node import WholeNode, cpulist, fmt  # noqa: E402

MACHINE = "intel-skylake-sp-2s-ht-pci"  # 2 sockets, 2 NUMA nodes, HT: 0-7,16-23 / 8-15,24-31
NUMA0 = cpulist("0-7,16-23")
NUMA1 = cpulist("8-15,24-31")
UID_A = "aaaaaaaa-0000-4000-8000-00000000000a"
UID_B = "bbbbbbbb-0000-4000-8000-00000000000b"
UID_UNPREPARED = "dddddddd-0000-4000-8000-00000000000d"


def run(node):
    node.start()
    check(True, "apiserver, runtime, dra-agent, nri-agent and kubelet simulators up")
    pool = node.shared_pool()
    check(len(pool) > 4, "shared pool before any claim: %s" % fmt(pool))

    r = node.create("shared", "sb-shared")
    check(r["ok"] and cpulist(r["cpus"]) == pool,
          "a container without claims gets the whole shared pool: %s" % r)

    node.add_claim(UID_A, "cpudevnuma000", 4)
    out = node.prepare(UID_A)
    check(out[UID_A]["error"] == "", "claim A prepared: %s" % out)
    cpus_a = node.claim_cpus(UID_A)
    check(cpus_a is not None and len(cpus_a) == 4 and cpus_a <= NUMA0,
          "claim A holds 4 CPUs of NUMA node 0: %s" % fmt(cpus_a or set()))

    r = node.create("ca", "sb-a", claim_uids=[UID_A])
    check(r["ok"] and cpulist(r["cpus"]) == cpus_a, "claim A's container pinned to its CPUs: %s" % r)
    shared = node.wait_for(lambda: (lambda c: c if not c & cpus_a else None)(
        node.containers()["shared"]["cpus"]), "the shared container to leave claim A's CPUs")
    check(shared == pool - cpus_a, "shared container shrank to %s" % fmt(shared))
    check(node.shared_pool() == pool - cpus_a, "shared memory's shared pool excludes claim A")

    r = node.create("forged", "sb-f", env=["DRA_CPUSET_%s=0-1" % UID_UNPREPARED])
    check(not r["ok"] and r.get("error"), "forged DRA_CPUSET env refused: %s" % r.get("error"))
    r = node.create("ca2", "sb-a2", claim_uids=[UID_A])
    check(not r["ok"] and r.get("error"), "second container on claim A refused: %s" % r.get("error"))

    before = node.containers()
    node.kill_nri_agent(signal.SIGKILL)
    node.start_nri_agent()
    after = node.containers()
    check(after == before, "SIGKILL and restart of the nri-agent: containers unchanged")
    r = node.create("shared2", "sb-shared2")
    check(r["ok"] and cpulist(r["cpus"]) == pool - cpus_a,
          "new shared container after the restart gets the shared pool: %s" % r)

    check(node.stop("ca")["ok"] and node.remove("ca")["ok"], "claim A's container stopped and removed")
    out = node.unprepare(UID_A)
    check(out[UID_A]["error"] == "", "claim A unprepared: %s" % out)
    node.wait_for(lambda: node.containers()["shared"]["cpus"] == pool,
                  "the shared container to grow back to %s" % fmt(pool))
    node.wait_for(lambda: node.containers()["shared2"]["cpus"] == pool,
                  "the second shared container to grow back")
    check(True, "shared containers grew back to the full pool %s" % fmt(pool))

    before = node.containers()
    node.restart_runtime()
    check(node.containers() == before, "runtime restart: the nri-agent resynchronizes, containers unchanged")
    r = node.create("shared3", "sb-shared3")
    check(r["ok"] and cpulist(r["cpus"]) == pool, "creation works after the runtime restart: %s" % r)
    check("dracpu_nri_requests_total" in node.metrics("nri") and
          "dra_cpu_allocated_cpus" in node.metrics("dra"), "both agents serve /metrics")
    # A kubelet that speaks only v1beta1 (Kubernetes 1.32/1.33) prepares and unprepares too.
    node.add_claim(UID_B, "cpudevnuma001", 2)
    rc, out = node.kubelet_cli("--versions", "v1beta1.DRAPlugin", "prepare", *node._refs([UID_B]))
    cpus_b = node.claim_cpus(UID_B) or set()
    check(rc == 0 and out[UID_B]["error"] == "" and len(cpus_b) == 2 and cpus_b <= NUMA1,
          "v1beta1 kubelet: claim B prepared on NUMA node 1: %s %s" % (fmt(cpus_b), out))
    r = node.create("cb", "sb-b", claim_uids=[UID_B])
    check(r["ok"] and cpulist(r["cpus"]) == cpus_b, "claim B's container pinned: %s" % r)
    check(node.stop("cb")["ok"] and node.remove("cb")["ok"], "claim B's container removed")
    rc, out = node.kubelet_cli("--versions", "v1beta1.DRAPlugin", "unprepare", *node._refs([UID_B]))
    check(rc == 0 and node.claim_cpus(UID_B) is None, "v1beta1 kubelet: claim B unprepared: %s" % out)
    ok, text = node.shm_verify()
    check(ok, "dracpu-shm verify passes: %s" % text)


def main():
    build = sys.argv[1]
    shared = os.environ.get("DRACPU_SHARED_DIR", "")
    if not os.path.isdir(os.path.join(shared, "sysfs-corpus")):
        print("../shared (DRACPU_SHARED_DIR) is absent: e2e test skipped")
        return 77
    node = WholeNode(build, machine=MACHINE, shared_dir=shared, tmp_prefix="dracpu-wn-e2e-")
    try:
        run(node)
        print("whole-node e2e: all checks passed")
        return 0
    except (Fail, OSError, RuntimeError) as e:
        print("FAIL:", e)
        for name in ("nri-agent", "dra-agent", "runtime"):
            print("--- %s log ---\n%s" % (name, node._log_tail(name)))
        return 1
    finally:
        node.cleanup()


if __name__ == "__main__":
    sys.exit(main())
