#!/usr/bin/env python3
"""Restarts on a whole node (both real agents, whole_node.py; issue 8 item 2, and the reference's
"NRI reconciliation" end-to-end case):

  * containers that exist before the nri-agent starts (an exclusive one, a shared one, one with a
    forged env) are pinned by its first Synchronize;
  * nri-agent SIGKILL and restart with containers running, and a shared container created while
    it was away (it got every CPU) shrunk back by the Synchronize;
  * dra-agent SIGKILL and restart alone; both agents SIGKILLed at once (a pod restart): claims keep
    their CPUs, containers are unchanged, new prepares and creates work;
  * runtime restart: the nri-agent reconnects, resynchronizes, nothing lost;
  * kubelet restart (a new registration): prepares still work;
  * the node's ResourceSlices deleted as a starting kubelet does: the dra-agent republishes them.

Usage: node_restarts_e2e.py BUILD_DIR   (env DRACPU_SHARED_DIR). Exit 77 = skipped.
"""
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from node_common import ALL, NUMA, check, cpulist, fmt, main, metric, uid  # noqa: E402


class State:
    """What must survive every restart: claim CPUs and container cpusets."""

    def __init__(self, node):
        self.node = node
        self.claims = {}

    def add(self, u, device, n, cid):
        node = self.node
        node.add_claim(u, device, n)
        out = node.prepare(u)
        check(out[u]["error"] == "", "claim %s prepared on %s" % (u[-4:], device))
        cpus = node.claim_cpus(u)
        check(cpus and len(cpus) == n, "claim %s holds %s" % (u[-4:], fmt(cpus or set())))
        r = node.create(cid, "sb-" + cid, claim_uids=[u])
        check(r["ok"] and cpulist(r["cpus"]) == cpus, "container %s pinned to claim %s" % (cid, u[-4:]))
        self.claims[u] = cpus
        return cpus

    def held(self):
        return set().union(*self.claims.values()) if self.claims else set()

    def verify(self, what, before=None):
        node = self.node
        for u, cpus in self.claims.items():
            check(node.claim_cpus(u) == cpus, "%s: claim %s keeps %s" % (what, u[-4:], fmt(cpus)))
        if before is not None:
            after = node.containers()
            check(after == before, "%s: containers unchanged" % what)
        ok, text = node.shm_verify()
        check(ok, "%s: dracpu-shm verify: %s" % (what, text))

    def settle_shared(self, what, *shared):
        node = self.node
        pool = ALL - self.held()
        for cid in shared:
            node.wait_for(lambda: node.containers()[cid]["cpus"] == pool,
                          "%s: %s on the shared pool %s" % (what, cid, fmt(pool)))
        check(True, "%s: shared containers on the pool %s" % (what, fmt(pool)))


def run(ctx):
    node = ctx.node(start=False)
    node.start_without_nri_agent()
    s = State(node)

    # --- NRI reconciliation: containers before the nri-agent ---------------------------------
    A = uid(0xa)
    node.add_claim(A, "cpudevnuma000", 4)
    check(node.prepare(A)[A]["error"] == "", "claim A prepared before the nri-agent runs")
    ca = node.claim_cpus(A)
    s.claims[A] = ca
    for cid, kw in [("pre-excl", {"claim_uids": [A]}), ("pre-shared", {}),
                    ("pre-forged", {"env": ["DRA_CPUSET_%s=0-1" % uid(0xf)]})]:
        r = node.create(cid, "sb-" + cid, **kw)
        check(r["ok"], "%s created while no plugin is registered" % cid)
        check(node.update(cid, "0-31")["ok"], "%s runs on every CPU (as the runtime left it)" % cid)
    node.start_nri_agent()
    cs = node.containers()
    check(cs["pre-excl"]["cpus"] == ca, "Synchronize pinned the earlier exclusive container to %s" % fmt(ca))
    check(cs["pre-shared"]["cpus"] == ALL - ca, "Synchronize moved the earlier shared container to %s" % fmt(ALL - ca))
    check(cs["pre-forged"]["cpus"] == ALL - ca, "Synchronize put the forged-env container on the shared pool")
    r = node.create("ca-second", "sb-second", claim_uids=[A])
    check(not r["ok"], "claim A is bound to the synchronized container: another pod refused")
    node.remove("pre-forged")

    # --- nri-agent restart, and a container created while it is away -------------------------
    s.add(uid(0xb), "cpudevnuma001", 3, "cb")
    s.settle_shared("before the nri-agent restart", "pre-shared")
    before = node.containers()
    node.kill_nri_agent(signal.SIGKILL)
    r = node.create("while-away", "sb-while-away")
    check(r["ok"], "a shared container created while the nri-agent is down")
    node.update("while-away", "0-31")
    node.update("pre-shared", "0-31")  # something else widened it meanwhile
    node.start_nri_agent()
    cs = node.containers()
    pool = ALL - s.held()
    check(cs["while-away"]["cpus"] == pool and cs["pre-shared"]["cpus"] == pool,
          "after the restart Synchronize put both shared containers back on %s" % fmt(pool))
    del cs["while-away"]
    check(cs == before, "nri-agent SIGKILL and restart: the other containers unchanged")
    s.verify("nri-agent restart")
    s.add(uid(0xc), "cpudevnuma000", 2, "cc")

    # --- dra-agent alone -----------------------------------------------------------------------
    s.settle_shared("before the dra-agent restart", "pre-shared", "while-away")
    before = node.containers()
    node.kill_dra_agent(signal.SIGKILL)
    r = node.create("dra-down", "sb-dra-down")
    check(r["ok"] and cpulist(r["cpus"]) == ALL - s.held(),
          "a shared container created while the dra-agent is down gets the pool")
    node.remove("dra-down")
    node.start_dra_agent()
    s.verify("dra-agent SIGKILL and restart", before)
    out = node.prepare(*s.claims)
    check(all(out[u]["error"] == "" for u in s.claims), "re-prepare of every claim after the restart succeeds")
    s.verify("re-prepare after the dra-agent restart", before)
    s.add(uid(0xd), "cpudevnuma001", 2, "cd")

    # --- both at once (pod restart) ----------------------------------------------------------
    s.settle_shared("before the pod restart", "pre-shared", "while-away")
    before = node.containers()
    node.kill_nri_agent(signal.SIGKILL)
    node.kill_dra_agent(signal.SIGKILL)
    node.start_dra_agent()
    node.start_nri_agent()
    s.verify("both agents SIGKILLed and restarted", before)
    s.add(uid(0xe), "cpudevnuma000", 2, "ce")
    s.settle_shared("after the pod restart", "pre-shared", "while-away")
    # and the other order: the nri-agent first, the dra-agent after it
    before = node.containers()
    node.kill_dra_agent(signal.SIGKILL)
    node.kill_nri_agent(signal.SIGKILL)
    node.start_nri_agent()
    node.start_dra_agent()
    s.verify("both restarted, the nri-agent first", before)
    s.add(uid(0x1e), "cpudevnuma001", 2, "c1e")
    s.settle_shared("after the second pod restart", "pre-shared", "while-away")

    # --- runtime restart -----------------------------------------------------------------------
    disc0 = metric(node.metrics("nri"), "dracpu_nri_disconnects_total")
    before = node.containers()
    node.restart_runtime()
    s.verify("runtime restart", before)
    check(metric(node.metrics("nri"), "dracpu_nri_disconnects_total") > disc0,
          "dracpu_nri_disconnects_total counts the lost connection")
    r = node.create("after-rt", "sb-after-rt")
    check(r["ok"] and cpulist(r["cpus"]) == ALL - s.held(), "a shared container after the runtime restart")
    s.add(uid(0xf0), "cpudevnuma000", 1, "cf0")

    # --- kubelet re-registration -------------------------------------------------------------
    node.restart_kubelet()
    out = node.prepare(*s.claims)
    check(all(out[u]["error"] == "" for u in s.claims), "after a kubelet restart: re-prepare of every claim")
    s.add(uid(0xf1), "cpudevnuma001", 1, "cf1")
    s.verify("kubelet restart")

    # --- slices wiped ------------------------------------------------------------------------
    devs = node.devices()
    n = node.delete_slices()
    check(n >= 1, "the node's %d ResourceSlice(s) deleted as a starting kubelet does" % n)
    back = node.wait_for(lambda: node.devices() or None, "the dra-agent to republish its slices", timeout=30)
    check(back == devs, "the republished devices are the same: %s" % sorted(back))
    s.add(uid(0xf2), "cpudevnuma000", 1, "cf2")
    s.settle_shared("at the end", "pre-shared", "while-away", "after-rt")
    s.verify("at the end")
    for u, cpus in s.claims.items():
        dev = 0 if cpus <= NUMA[0] else 1
        check(cpus <= NUMA[dev], "claim %s inside one NUMA node" % u[-4:])


if __name__ == "__main__":
    sys.exit(main(run, "node_restarts_e2e"))
