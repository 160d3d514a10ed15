#!/usr/bin/env python3
"""Claims and containers on a whole node (both real agents, whole_node.py; issue 8 item 2):

  * ResourceSlices as published in the apiserver simulator: one pool, the NUMA devices with
    their attributes and capacity, checked against the machine's topology;
  * claim sharing refused (a second container of the same pod, a second pod), the same container
    restarting allowed (and the binding kept when the old one is removed);
  * forged and malformed DRA_CPUSET_ env refused with clear errors (garbage value, bad uid,
    a prepared claim's uid with other CPUs, an unprepared uid, the same claim twice);
  * a per-claim policy.alignMemory: the container's cpuset.mems is the claim's NUMA node;
  * concurrent prepares from parallel kubelet-simulator processes, then a container on each:
    no overlap;
  * metrics of both agents (documented names; counts follow the prepares and creates);
  * the shared pool growing back after unprepare (the runtime reports NRI v0.12.1, so the
    nri-agent widens running shared containers).

Usage: node_claims_e2e.py BUILD_DIR   (env DRACPU_SHARED_DIR). Exit 77 = skipped.
"""
import concurrent.futures
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from node_common import ALL, NUMA, check, cpulist, fmt, main, metric, parse_metrics, uid  # noqa: E402

DRA_METRICS = ["dra_cpu_prepare_claims_total", "dra_cpu_unprepare_claims_total",
               "dra_cpu_prepare_claim_duration_seconds", "dra_cpu_unprepare_claim_duration_seconds",
               "dra_cpu_allocated_cpus", "dra_cpu_available_cpus", "dra_cpu_reserved_cpus",
               "dra_cpu_resource_claims_active"]
NRI_METRICS = ["dracpu_nri_requests_total", "dracpu_nri_request_duration_seconds",
               "dracpu_nri_containers", "dracpu_nri_shared_pool_cpus",
               "dracpu_nri_shared_pool_updates_total", "dracpu_nri_synchronized",
               "dracpu_nri_segment_attached", "dracpu_nri_disconnects_total"]


def refused(node, cid, env, what, *needles):
    r = node.create(cid, "sb-" + cid, env=env)
    err = r.get("error", "")
    check(not r["ok"] and all(n.lower() in err.lower() for n in needles),
          "%s refused: %s" % (what, err))


def slices_checks(node):
    slices = node.slices()
    check(len(slices) == 1, "one ResourceSlice for the node")
    spec = slices[0]["spec"]
    check(spec["driver"] == "dra.cpu" and spec["pool"]["name"] == "node-1" and
          spec["pool"]["resourceSliceCount"] == 1 and spec["nodeName"] == "node-1",
          "driver dra.cpu, pool node-1, resourceSliceCount 1")
    owner = slices[0]["metadata"].get("ownerReferences", [{}])[0]
    check(owner.get("kind") == "Node" and owner.get("name") == "node-1" and
          owner.get("uid") == "uid-node-1", "owned by the Node: %s" % owner)
    devs = {d["name"]: d for d in spec["devices"]}
    check(sorted(devs) == ["cpudevnuma000", "cpudevnuma001"], "one device per NUMA node")
    for i, name in enumerate(sorted(devs)):
        a = devs[name]["attributes"]
        check(a["dra.cpu/numaNodeID"]["int"] == i and a["resource.kubernetes.io/numaNode"]["int"] == i
              and a["dra.net/numaNode"]["int"] == i,
              "%s: numaNode attributes = %d" % (name, i))
        check(a["dra.cpu/socketID"]["int"] == i, "%s: socketID %d (one NUMA node per socket)" % (name, i))
        check(a["dra.cpu/smtEnabled"]["bool"] is True, "%s: smtEnabled true" % name)
        cap = devs[name]["capacity"]["dra.cpu/cpu"]
        want = len(NUMA[i]) - (1 if i == 0 else 0)  # minSharedCPUs=1 comes off the first device
        check(cap["value"] == str(want) and a["dra.cpu/numCPUs"]["int"] == want,
              "%s: capacity dra.cpu/cpu %s = numCPUs (%d CPUs, floor taken from device 0)"
              % (name, cap["value"], len(NUMA[i])))
        check(cap.get("requestPolicy", {}).get("validRange", {}).get("min") == "1",
              "%s: requestPolicy validRange min 1" % name)
        check(devs[name].get("allowMultipleAllocations") is True, "%s: allowMultipleAllocations" % name)


def run(ctx):
    node = ctx.node()
    slices_checks(node)

    dra0, nri0 = node.metrics("dra"), node.metrics("nri")
    for name in DRA_METRICS:
        check(("# TYPE %s " % name) in dra0, "dra-agent /metrics has " + name)
    for name in NRI_METRICS:
        check(("# TYPE %s " % name) in nri0, "nri-agent /metrics has " + name)
    dra0, nri0 = parse_metrics(dra0), parse_metrics(nri0)

    pool0 = node.shared_pool()
    check(pool0 == ALL, "shared pool before any claim: %s" % fmt(pool0))
    check(node.create("shared1", "sb-shared1")["ok"], "shared container 1")

    # --- sharing -----------------------------------------------------------------------------
    A, B = uid(0xa), uid(0xb)
    node.add_claim(A, "cpudevnuma000", 4)
    node.add_claim(B, "cpudevnuma001", 2)
    out = node.prepare(A, B)
    check(out[A]["error"] == "" and out[B]["error"] == "", "claims A and B prepared together")
    ca, cb = node.claim_cpus(A), node.claim_cpus(B)
    check(len(ca) == 4 and ca <= NUMA[0] and len(cb) == 2 and cb <= NUMA[1] and not ca & cb,
          "A has 4 CPUs of node 0 (%s), B 2 of node 1 (%s)" % (fmt(ca), fmt(cb)))
    r = node.create("ca", "sb-a", claim_uids=[A], name="main")
    check(r["ok"] and cpulist(r["cpus"]) == ca, "A's container pinned to %s" % fmt(ca))
    r = node.create("ca-side", "sb-a", claim_uids=[A], name="side")
    check(not r["ok"] and "already" in r.get("error", "").lower(),
          "a second container of the same pod on claim A refused: %s" % r.get("error"))
    r = node.create("ca-other", "sb-other", claim_uids=[A], name="main")
    check(not r["ok"] and "already" in r.get("error", "").lower(),
          "a container of another pod on claim A refused: %s" % r.get("error"))
    check(node.stop("ca")["ok"], "A's container stopped")
    r = node.create("ca-restart", "sb-a", claim_uids=[A], name="main")
    check(r["ok"] and cpulist(r["cpus"]) == ca, "the same container restarting (new id) is allowed: %s" % r)
    check(node.remove("ca")["ok"], "the old container removed")
    r = node.create("ca-other2", "sb-other", claim_uids=[A], name="main")
    check(not r["ok"], "claim A still bound to the restarted container: another pod refused")

    # --- forged and malformed env ------------------------------------------------------------
    refused(node, "bad1", ["DRA_CPUSET_%s=garbage" % B], "DRA_CPUSET_<B>=garbage", B)
    refused(node, "bad2", ["DRA_CPUSET_%s=" % B], "an empty DRA_CPUSET_ value", B)
    refused(node, "bad3", ["DRA_CPUSET_not-a-uid=0-1"], "a DRA_CPUSET_ with an unknown uid", "not-a-uid")
    refused(node, "bad8", ["DRA_CPUSET_=0-1"], "a DRA_CPUSET_ without a uid", "DRA_CPUSET_")
    other = (NUMA[1] - cb)
    other = set(sorted(other)[:2])
    refused(node, "bad4", ["DRA_CPUSET_%s=%s" % (B, fmt(other))],
            "prepared claim B's uid with other CPUs (%s)" % fmt(other), "match")
    refused(node, "bad5", ["DRA_CPUSET_%s=%s" % (uid(0xdead), fmt(cb))], "an unprepared uid", "not prepared")
    refused(node, "bad6", ["DRA_CPUSET_%s=%s" % (B, fmt(cb)), "DRA_CPUSET_%s=%s" % (B, fmt(ca))],
            "the same claim twice with different CPUs", B)
    refused(node, "bad7", ["DRA_CPUSET_%s=%s" % (B, fmt(ca))], "claim B's uid with claim A's CPUs", "match")
    cs = node.containers()
    check(not [c for c in cs if c.startswith("bad")], "no refused container is left in the runtime")
    r = node.create("cb", "sb-b", claim_uids=[B])
    check(r["ok"] and cpulist(r["cpus"]) == cb, "claim B's real container still starts on %s" % fmt(cb))

    # --- concurrent prepares -----------------------------------------------------------------
    many = [(uid(0x100 + i), "cpudevnuma00%d" % (i % 2), 2 + i % 2) for i in range(6)]
    for u, dev, n in many:
        node.add_claim(u, dev, n)
    with concurrent.futures.ThreadPoolExecutor(len(many)) as ex:
        results = list(ex.map(lambda m: node.kubelet_cli("prepare", node._refs([m[0]])[0]), many))
    check(all(rc == 0 and out.get(m[0], {}).get("error") == "" for (rc, out), m in zip(results, many)),
          "6 claims prepared at once by 6 kubelet processes: %s" % [rc for rc, _ in results])
    held = {A: ca, B: cb}
    for u, dev, n in many:
        cpus = node.claim_cpus(u)
        check(cpus and len(cpus) == n and cpus <= NUMA[int(dev[-1])], "claim %s: %s" % (u[-3:], fmt(cpus)))
        held[u] = cpus
    allc = [c for cpus in held.values() for c in cpus]
    check(len(allc) == len(set(allc)), "no CPU in two claims (%d CPUs held)" % len(allc))
    for i, (u, _, _) in enumerate(many):
        r = node.create("m%d" % i, "sb-m%d" % i, claim_uids=[u])
        check(r["ok"] and cpulist(r["cpus"]) == held[u], "container m%d pinned to its claim" % i)
    cs = node.containers()
    excl = [cs[c]["cpus"] for c in ["ca-restart", "cb"] + ["m%d" % i for i in range(6)]]
    flat = [c for s in excl for c in s]
    check(len(flat) == len(set(flat)), "no CPU in two exclusive containers")
    pool = ALL - set(allc)
    node.wait_for(lambda: node.containers()["shared1"]["cpus"] == pool, "shared1 to shrink to " + fmt(pool))
    check(node.shared_pool() == pool, "shared pool = all - claims = %s" % fmt(pool))

    # --- alignMemory per claim: cpuset.mems = the claim's NUMA node ---------------------------
    M = uid(0x200)
    node.add_claim(M, "cpudevnuma001", 1, config=[{"source": "FromClaim", "requests": [], "opaque": {
        "driver": "dra.cpu", "parameters": {"apiVersion": "v1alpha1", "policy": {"alignMemory": True}}}}])
    check(node.prepare(M)[M]["error"] == "", "a claim with policy.alignMemory prepared")
    cm = node.claim_cpus(M)
    r = node.create("mem", "sb-mem", claim_uids=[M])
    check(r["ok"] and cpulist(r["cpus"]) == cm and r.get("mems") == "1",
          "its container gets CPUs %s and cpuset.mems 1 (NUMA node 1): %s" % (fmt(cm), r))
    node.stop("mem")
    node.remove("mem")
    check(node.unprepare(M)[M]["error"] == "", "the alignMemory claim unprepared")
    node.wait_for(lambda: node.containers()["shared1"]["cpus"] == pool and
                  metric(node.metrics("nri"), "dracpu_nri_shared_pool_cpus") == len(pool),
                  "the shared pool back to " + fmt(pool))

    # --- metrics -----------------------------------------------------------------------------
    dra1, nri1 = parse_metrics(node.metrics("dra")), parse_metrics(node.metrics("nri"))
    d = metric(dra1, "dra_cpu_prepare_claims_total", result="success") - \
        metric(dra0, "dra_cpu_prepare_claims_total", result="success")
    check(d >= 9, "dra_cpu_prepare_claims_total{result=success} grew by %d (9 claims)" % d)
    check(metric(dra1, "dra_cpu_resource_claims_active") == 8, "dra_cpu_resource_claims_active 8")
    check(metric(dra1, "dra_cpu_allocated_cpus") == len(allc), "dra_cpu_allocated_cpus %d" % len(allc))
    check(metric(dra1, "dra_cpu_available_cpus") == len(pool), "dra_cpu_available_cpus %d" % len(pool))
    d = metric(nri1, "dracpu_nri_requests_total", method="CreateContainer") - \
        metric(nri0, "dracpu_nri_requests_total", method="CreateContainer")
    check(d >= 22, "dracpu_nri_requests_total{method=CreateContainer} grew by %d (22 creates, refused ones included)" % d)
    check(metric(nri1, "dracpu_nri_containers", kind="exclusive") == 8,
          "dracpu_nri_containers{kind=exclusive} 8 (ca stopped-and-removed, ca-restart counted)")
    check(metric(nri1, "dracpu_nri_shared_pool_cpus") == len(pool), "dracpu_nri_shared_pool_cpus %d" % len(pool))
    check(metric(nri1, "dracpu_nri_synchronized") == 1 and metric(nri1, "dracpu_nri_segment_attached") == 1,
          "nri-agent synchronized and attached")

    # --- shared pool growing back ------------------------------------------------------------
    for c in ["ca-restart", "cb"] + ["m%d" % i for i in range(6)]:
        node.stop(c)
        node.remove(c)
    out = node.unprepare(A, B, *[m[0] for m in many])
    check(all(v["error"] == "" for v in out.values()), "all 8 claims unprepared")
    node.wait_for(lambda: node.containers()["shared1"]["cpus"] == ALL, "shared1 to grow back to all CPUs")
    check(True, "the running shared container grew back to %s" % fmt(ALL))
    check(node.shared_pool() == ALL, "shared pool back to all CPUs")
    dra2 = parse_metrics(node.metrics("dra"))
    check(metric(dra2, "dra_cpu_resource_claims_active") == 0 and metric(dra2, "dra_cpu_allocated_cpus") == 0,
          "dra-agent metrics: no claim, no allocated CPU")
    check(metric(dra2, "dra_cpu_unprepare_claims_total", result="success") >= 8,
          "dra_cpu_unprepare_claims_total{result=success} counts the 8 unprepares")
    nri2 = parse_metrics(node.metrics("nri"))
    check(metric(nri2, "dracpu_nri_shared_pool_updates_total") > metric(nri0, "dracpu_nri_shared_pool_updates_total"),
          "dracpu_nri_shared_pool_updates_total counts the widening")
    ok, text = node.shm_verify()
    check(ok, "dracpu-shm verify: %s" % text)


if __name__ == "__main__":
    sys.exit(main(run, "node_claims_e2e"))
