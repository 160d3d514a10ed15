#!/usr/bin/env python3
"""CPU assignment on a whole node (both real agents, whole_node.py), in every device mode
(issue 8 item 2; reference-driver.md section 7 "CPU Allocation"):

  * grouped by NUMA node, grouped by socket, grouped by machine with opaque cpuConfig.cpuset
    claims, and individual (one device per CPU), each mode set in the dra-agent's config file;
  * each claim gets CPUs of its device (the exact cpuset in machine mode), the container created
    with the claim is pinned to exactly the claim's CPUs, shared containers created before (shrunk)
    and after exclude every claim's CPUs, and no two claims overlap.

Usage: node_assignment_e2e.py BUILD_DIR   (env DRACPU_SHARED_DIR). Exit 77 = skipped.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from node_common import ALL, NUMA, check, cpulist, fmt, main, sibling, uid  # noqa: E402


def opaque_cpuset(cpus):
    return [{"source": "FromClaim", "requests": [],
             "opaque": {"driver": "dra.cpu",
                        "parameters": {"apiVersion": "v1alpha1", "cpuConfig": {"cpuset": cpus}}}}]


def assign(node, mode, claims):
    """claims: [(uid, expected: a set to equal or a callable(cpus) -> bool)], all already added.
    Prepares them, runs one container per claim and checks the pinning and the shared pool."""
    before = node.create("shared-before", "sb-shared-before")
    check(before["ok"] and cpulist(before["cpus"]) == node.shared_pool(),
          "%s: a shared container before the claims gets the shared pool %s" % (mode, before.get("cpus")))
    held = set()
    for i, (u, expect) in enumerate(claims):
        out = node.prepare(u)
        check(out[u]["error"] == "", "%s: claim %d prepared %s" % (mode, i, out[u]["error"]))
        cpus = node.claim_cpus(u)
        ok = cpus == expect if isinstance(expect, set) else bool(cpus) and expect(cpus)
        check(ok, "%s: claim %d holds the expected CPUs: %s" % (mode, i, fmt(cpus or set())))
        check(not cpus & held, "%s: claim %d overlaps no other claim" % (mode, i))
        held |= cpus
        r = node.create("excl-%d" % i, "sb-excl-%d" % i, claim_uids=[u])
        check(r["ok"] and cpulist(r["cpus"]) == cpus,
              "%s: claim %d's container pinned to exactly %s: %s" % (mode, i, fmt(cpus), r))
    pool = node.shared_pool()
    check(pool == ALL - held - {0} or pool == ALL - held,
          "%s: shared pool %s = all CPUs minus the claims" % (mode, fmt(pool)))
    node.wait_for(lambda: node.containers()["shared-before"]["cpus"] == pool,
                  "%s: the earlier shared container to shrink to %s" % (mode, fmt(pool)))
    check(True, "%s: the shared container created before shrank to %s" % (mode, fmt(pool)))
    after = node.create("shared-after", "sb-shared-after")
    check(after["ok"] and cpulist(after["cpus"]) == pool and not cpulist(after["cpus"]) & held,
          "%s: a shared container created after gets %s, no claim CPU" % (mode, after.get("cpus")))
    cs = node.containers()
    for i, (u, _) in enumerate(claims):
        check(cs["excl-%d" % i]["cpus"] == node.claim_cpus(u),
              "%s: container excl-%d still on its claim's CPUs" % (mode, i))
    ok, text = node.shm_verify()
    check(ok, "%s: dracpu-shm verify: %s" % (mode, text))


def two_requests(node, u):
    """Re-posts claim u with two requests, each allocated 1 CPU of cpudevnuma000."""
    import json
    import urllib.request
    body = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"namespace": "default", "name": "claim-" + u, "uid": u},
            "spec": {"devices": {"requests": [{"name": n, "exactly": {"deviceClassName": "dra.cpu"}}
                                              for n in ("a", "b")]}},
            "status": {"allocation": {"devices": {"results": [
                {"request": n, "driver": "dra.cpu", "pool": "node-1", "device": "cpudevnuma000",
                 "consumedCapacity": {"dra.cpu/cpu": "1"}} for n in ("a", "b")], "config": []}}}}
    req = urllib.request.Request(node.api_url + "/_sim/resourceclaims", method="POST",
                                 data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    urllib.request.urlopen(req, timeout=5).read()


def whole_cores(cpus):
    return all(sibling(c) in cpus for c in cpus)


def run(ctx):
    node = ctx.node(config="groupBy: numanode\n")
    check(sorted(node.devices()) == ["cpudevnuma000", "cpudevnuma001"], "numanode: two NUMA devices published")
    node.add_claim(uid(1), "cpudevnuma001", 4)
    node.add_claim(uid(2), "cpudevnuma000", 2)
    assign(node, "numanode", [(uid(1), lambda c: len(c) == 4 and c <= NUMA[1]),
                              (uid(2), lambda c: len(c) == 2 and c <= NUMA[0])])
    # One claim, two 1-CPU requests on one device (the reference's "two requests" case).
    two = uid(11)
    node.add_claim(two, "cpudevnuma000", 1)
    two_requests(node, two)
    check(node.prepare(two)[two]["error"] == "", "numanode: a claim with two 1-CPU requests prepared")
    cpus = node.claim_cpus(two)
    check(len(cpus) == 2 and cpus <= NUMA[0] and not cpus & (node.claim_cpus(uid(2)) | node.claim_cpus(uid(1))),
          "numanode: its two requests got 2 distinct free CPUs of node 0: %s" % fmt(cpus))
    r = node.create("excl-two", "sb-excl-two", claim_uids=[two])
    check(r["ok"] and cpulist(r["cpus"]) == cpus, "numanode: its container pinned to both: %s" % r.get("cpus"))
    node.cleanup()

    node = ctx.node(config="cpuDeviceMode: grouped\ngroupBy: socket\n")
    check(sorted(node.devices()) == ["cpudevsocket000", "cpudevsocket001"], "socket: two socket devices published")
    node.add_claim(uid(3), "cpudevsocket001", 6)
    node.add_claim(uid(4), "cpudevsocket000", 4)
    assign(node, "socket", [(uid(3), lambda c: len(c) == 6 and c <= NUMA[1] and whole_cores(c)),
                            (uid(4), lambda c: len(c) == 4 and c <= NUMA[0] and whole_cores(c))])
    node.cleanup()

    node = ctx.node(config="groupBy: machine\n")
    check(sorted(node.devices()) == ["cpudevmachine"], "machine: one machine device published")
    node.add_claim(uid(5), "cpudevmachine", 2, config=opaque_cpuset("3,19"))
    node.add_claim(uid(6), "cpudevmachine", 1, config=opaque_cpuset("10"))
    node.add_claim(uid(7), "cpudevmachine", 3)  # no cpuConfig: the allocator chooses
    assign(node, "machine", [(uid(5), {3, 19}), (uid(6), {10}), (uid(7), lambda c: len(c) == 3)])
    node.add_claim(uid(8), "cpudevmachine", 1, config=opaque_cpuset("19"))
    out = node.prepare(uid(8))
    check(out[uid(8)]["error"] != "", "machine: an opaque cpuset held by another claim is refused: %s"
          % out[uid(8)]["error"])
    node.cleanup()

    node = ctx.node(config="cpuDeviceMode: individual\n")
    devs = node.devices()
    check(len(devs) == 31 and "cpudev000" in devs, "individual: 31 CPU devices (CPU 0 is the floor)")
    check(devs["cpudev000"]["attributes"]["dra.cpu/cpuID"]["int"] == 1 and
          devs["cpudev001"]["attributes"]["dra.cpu/cpuID"]["int"] == 17,
          "individual: cpudev000/001 are CPU 1 and its sibling 17")
    node.add_individual_claim(uid(9), ["cpudev000", "cpudev001"])
    by_cpu = {d["attributes"]["dra.cpu/cpuID"]["int"]: n for n, d in devs.items()}
    node.add_individual_claim(uid(10), [by_cpu[9], by_cpu[25], by_cpu[12]])
    assign(node, "individual", [(uid(9), {1, 17}), (uid(10), {9, 12, 25})])
    node.cleanup()


if __name__ == "__main__":
    sys.exit(main(run, "node_assignment_e2e"))
