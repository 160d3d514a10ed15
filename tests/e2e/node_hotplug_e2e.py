#!/usr/bin/env python3
"""CPU hotplug on a whole node (both real agents, whole_node.py; issue 8 item 2), in the node's
own writable copy of the Skylake-SP sysfs tree:

  * CPU 30 (NUMA node 1) goes offline (cpu30/online = 0, and the online/offline lists as the
    kernel shows them): the dra-agent's topology watcher (10 s poll) republishes the slices with
    cpudevnuma001's capacity one lower, the kubelet's health stream reports cpudevnuma001
    Unhealthy naming CPU 30 while cpudevnuma000 stays Healthy, a claim of the rest of the device
    gets every online CPU but not CPU 30 and a larger one is refused (before commit "dra-agent:
    never grant a CPU that went offline after start" the preparer handed out CPU 30);
  * CPU 30 comes back: capacity and health are restored;
  * claims and containers prepared before the change keep their CPUs throughout;
  * individual mode: the offline CPU's device is no longer published, Unhealthy in the health
    stream, never granted, and every other device keeps its name and CPU (they used to be
    renumbered, so names shifted to other CPUs while Prepare kept the start-up meaning).

Usage: node_hotplug_e2e.py BUILD_DIR   (env DRACPU_SHARED_DIR). Exit 77 = skipped.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from node_common import NUMA, check, cpulist, fmt, main, uid  # noqa: E402

CPU = 30


def capacity(node, dev):
    d = node.devices().get(dev)
    return int(d["capacity"]["dra.cpu/cpu"]["value"]) if d else None


def health_of(node):
    return {d["device"]: d for d in node.health(1)[0]}


def run(ctx):
    node = ctx.node()
    h = health_of(node)
    check(all(d["health"] == "Healthy" for d in h.values()) and sorted(h) == ["cpudevnuma000", "cpudevnuma001"],
          "health stream: both devices Healthy")
    check(capacity(node, "cpudevnuma001") == 16, "cpudevnuma001 capacity 16")

    A = uid(0xa)
    node.add_claim(A, "cpudevnuma001", 4)
    check(node.prepare(A)[A]["error"] == "", "claim A prepared on cpudevnuma001")
    ca = node.claim_cpus(A)
    if CPU in ca:
        raise RuntimeError("the allocator picked CPU %d; the scenario assumes it did not: %s" % (CPU, fmt(ca)))
    r = node.create("ca", "sb-a", claim_uids=[A])
    check(r["ok"] and cpulist(r["cpus"]) == ca, "A's container pinned to %s" % fmt(ca))
    check(node.create("shared", "sb-shared")["ok"], "a shared container")

    node.set_cpu_online(CPU, False)
    check(True, "CPU %d set offline in the sysfs copy" % CPU)
    node.wait_for(lambda: capacity(node, "cpudevnuma001") == 15,
                  "cpudevnuma001 republished with capacity 15", timeout=40)
    d = node.devices()["cpudevnuma001"]
    check(d["attributes"]["dra.cpu/numCPUs"]["int"] == 15, "slices republished: cpudevnuma001 capacity and numCPUs 15")
    check(capacity(node, "cpudevnuma000") == 15, "cpudevnuma000 unchanged (15)")

    def unhealthy():
        h = health_of(node)
        return h if h["cpudevnuma001"]["health"] == "Unhealthy" else None
    h = node.wait_for(unhealthy, "cpudevnuma001 Unhealthy in the health stream", timeout=30)
    check(str(CPU) in h["cpudevnuma001"]["message"],
          "cpudevnuma001 Unhealthy: %s" % h["cpudevnuma001"]["message"])
    check(h["cpudevnuma000"]["health"] == "Healthy", "cpudevnuma000 still Healthy")

    check(node.claim_cpus(A) == ca and node.containers()["ca"]["cpus"] == ca,
          "claim A and its container keep %s" % fmt(ca))
    r = node.create("shared-offline", "sb-shared-offline")
    check(r["ok"], "a shared container created while CPU %d is offline" % CPU)
    # The dra-agent records the online CPUs in shared memory, and the nri-agent's pool follows.
    check(CPU not in cpulist(r["cpus"]) and CPU not in node.shared_pool(),
          "the shared pool leaves out offline CPU %d: %s" % (CPU, r["cpus"]))
    node.remove("shared-offline")
    B = uid(0xb)
    rest = 15 - len(ca)
    node.add_claim(B, "cpudevnuma001", rest)
    out = node.prepare(B)
    cb = node.claim_cpus(B) or set()
    check(out[B]["error"] == "" and CPU not in cb and cb == NUMA[1] - ca - {CPU},
              "a claim of the rest of cpudevnuma001 (%d CPUs) gets every online CPU but not %d: %s %s"
              % (rest, CPU, fmt(cb), out[B]["error"]))
    if out[B]["error"] == "":
        r = node.create("cb", "sb-b", claim_uids=[B])
        check(r["ok"] and cpulist(r["cpus"]) == cb, "B's container pinned to %s" % fmt(cb))
        node.stop("cb")
        node.remove("cb")
        check(node.unprepare(B)[B]["error"] == "", "claim B unprepared")
    C = uid(0xc)
    node.add_claim(C, "cpudevnuma001", rest + 1)
    out = node.prepare(C)
    check(out[C]["error"] != "", "a claim larger than the online CPUs left is refused: %s"
              % (out[C]["error"] or fmt(node.claim_cpus(C) or set())))

    node.set_cpu_online(CPU, True)
    node.wait_for(lambda: capacity(node, "cpudevnuma001") == 16,
                  "cpudevnuma001 republished with capacity 16", timeout=40)
    check(True, "CPU %d back online: cpudevnuma001 capacity 16 again" % CPU)
    node.wait_for(lambda: all(d["health"] == "Healthy" for d in health_of(node).values()),
                  "both devices Healthy again", timeout=30)
    check(True, "health stream: both devices Healthy again")
    check(node.claim_cpus(A) == ca and node.containers()["ca"]["cpus"] == ca,
          "claim A and its container still on %s" % fmt(ca))
    ok, text = node.shm_verify()
    check(ok, "dracpu-shm verify: %s" % text)
    node.cleanup()

    # Individual mode: the offline CPU's device is no longer published and the other devices keep
    # their names (before commit "dra-agent: individual device names survive a CPU hotplug" the
    # consecutive numbering shifted cpudev027.. to other CPUs while Prepare and the health stream
    # kept the start-up names).
    node = ctx.node(config="cpuDeviceMode: individual\n")
    before = {n: d["attributes"]["dra.cpu/cpuID"]["int"] for n, d in node.devices().items()}
    name = next(n for n, c in before.items() if c == CPU)
    check(len(before) == 31, "individual: 31 devices, CPU %d is %s" % (CPU, name))
    node.set_cpu_online(CPU, False)
    node.wait_for(lambda: len(node.devices()) == 30, "individual: the slices republished with 30 devices",
                  timeout=40)
    after = {n: d["attributes"]["dra.cpu/cpuID"]["int"] for n, d in node.devices().items()}
    check(name not in after and CPU not in after.values(),
          "individual: %s (CPU %d) no longer published" % (name, CPU))
    moved = {n: (before[n], c) for n, c in after.items() if before.get(n) != c}
    check(not moved, "individual: every other device keeps its name and CPU (renamed: %s)" % moved)
    h = node.wait_for(lambda: (lambda h: h if any(d["health"] == "Unhealthy" for d in h.values()) else None)(
        health_of(node)), "individual: a device Unhealthy", timeout=30)
    bad = sorted(n for n, d in h.items() if d["health"] == "Unhealthy")
    check(bad == [name], "individual: the health stream reports %s Unhealthy: %s" % (name, h[name]["message"]))
    D, E = uid(0xd), uid(0xe)
    node.add_individual_claim(D, [name])
    out = node.prepare(D)
    check("offline" in out[D]["error"] and node.claim_cpus(D) is None,
          "individual: a claim still allocated %s is refused: %s" % (name, out[D]["error"]))
    nxt = sorted(after)[sorted(after).index("cpudev026") + 1]
    node.add_individual_claim(E, [nxt])
    out = node.prepare(E)
    check(out[E]["error"] == "" and node.claim_cpus(E) == {after[nxt]},
          "individual: a claim of %s (published as CPU %d) gets CPU %d" % (nxt, after[nxt], after[nxt]))
    r = node.create("ce", "sb-e", claim_uids=[E])
    check(r["ok"] and cpulist(r["cpus"]) == {after[nxt]}, "individual: its container pinned to it")

if __name__ == "__main__":
    sys.exit(main(run, "node_hotplug_e2e"))
