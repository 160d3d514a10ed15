#!/usr/bin/env python3
"""Every bad claim of issue 6 item 3 refused with its reason, through the simulators.

The real dra-agent runs on a small synthetic machine (tests/e2e/synthetic_sysfs.py: 2 sockets x 8
cores x SMT2, NUMA node 0 = CPUs 0-7,16-23, node 1 = 8-15,24-31) with minSharedCPUs 4, so
cpudevnuma000 publishes 12 CPUs and cpudevnuma001 16. A claim holding CPUs 8,24 (explicit
cpuset) is prepared first. Then each bad claim goes to NodePrepareResources together with a good
one-CPU claim, and for each: the bad claim's error holds the expected text, it has no CDI spec and
no entry in shared memory (nothing half-done), and the good claim of the same call is prepared
(errors are per claim). A claim with only another driver's results is prepared with no devices.
A CPU unplugged after start-up is not granted. Last, the shared-pool floor: with 27 of 32 CPUs claimed, a 2-CPU claim is refused (it would leave
3 < 4 shared CPUs) while a 1-CPU claim in the same call is granted.

Needs no ../shared, never skips. Usage: dra_agent_bad_claims_e2e.py BUILD_DIR
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dra_agent_e2e import Node, Fail, check, claim, spec_cpus, http_get, http_post, wait_for  # noqa: E402
from synthetic_sysfs import write_tree  # noqa: E402

NUMA = [{*range(0, 8), *range(16, 24)}, {*range(8, 16), *range(24, 32)}]


def uid(tag, i=0):
    return "bad%05d-0000-4000-8000-%012d" % (tag, i)


def opaque(parameters, source="FromClaim"):
    return [{"source": source, "requests": ["cpus"], "opaque": {"driver": "dra.cpu", "parameters": parameters}}]


def cpuset(cpus):
    return opaque({"apiVersion": "v1alpha1", "cpuConfig": {"cpuset": cpus}})


def with_results(c, results):
    c["status"]["allocation"]["devices"]["results"] = results
    return c


def no_allocation(u):
    c = claim(u, "cpudevnuma000", "1")
    del c["status"]
    return c


# (name, claim builder taking the uid, expected text in the error). The claim is posted under the
# uid the builder is given; the kubelet asks for the one in the table (they differ for wrong-uid).
CASES = [
    ("no allocation", no_allocation, "not allocated (no status.allocation)"),
    ("fractional", lambda u: claim(u, "cpudevnuma000", "1500m"), "is a fraction of a CPU"),
    ("zero", lambda u: claim(u, "cpudevnuma000", "0"), "is not positive"),
    ("not a quantity", lambda u: claim(u, "cpudevnuma000", "two"), "CPU quantity \"two\""),
    # No consumedCapacity = the whole device (a cluster without consumable capacity): refused
    # when part of it is held (8,24 by the first claim).
    ("whole device, partly held", lambda u: with_results(claim(u, "cpudevnuma001", "1"), [
        {"request": "cpus", "driver": "dra.cpu", "pool": "node-1", "device": "cpudevnuma001"}]),
     "allocated whole (no consumedCapacity), which needs all 16 CPUs it publishes; 14 of them are free"),
    ("over the device's capacity", lambda u: claim(u, "cpudevnuma000", "13"),
     "13 CPUs is more than the capacity 12 of device cpudevnuma000"),
    ("over the device's CPUs", lambda u: claim(u, "cpudevnuma001", "17"),
     "17 CPUs is more than the capacity 16 of device cpudevnuma001"),
    ("unknown device", lambda u: claim(u, "cpudevnuma007", "1"), "(device cpudevnuma007): no such device on this node"),
    ("another node's pool", lambda u: with_results(claim(u, "cpudevnuma000", "1"), [
        {"request": "cpus", "driver": "dra.cpu", "pool": "node-2", "device": "cpudevnuma000",
         "consumedCapacity": {"dra.cpu/cpu": "1"}}]), "pool node-2 is not this node's pool node-1"),
    ("cpuset overlapping a prepared claim", lambda u: claim(u, "cpudevnuma001", "2", cpuset("9,24")),
     "cpuConfig.cpuset CPUs 24 are held by another claim"),
    ("cpuset outside the device", lambda u: claim(u, "cpudevnuma001", "2", cpuset("0,16")),
     "cpuConfig.cpuset CPUs 0,16 are not allocatable CPUs of the device"),
    ("cpuset of the wrong size", lambda u: claim(u, "cpudevnuma001", "2", cpuset("10")),
     "cpuConfig.cpuset 10 has 1 CPUs, the allocation 2"),
    ("cpuset not a cpulist", lambda u: claim(u, "cpudevnuma001", "2", cpuset("10-x")),
     "cpuConfig.cpuset: cpuConfig.cpuset \"10-x\": expected a CPU id"),
    ("opaque parameters not JSON", lambda u: claim(u, "cpudevnuma000", "1", opaque("{cpuConfig: 1-2")),
     "opaque.parameters: not a JSON object"),
    ("opaque unknown apiVersion", lambda u: claim(u, "cpudevnuma000", "1", opaque(
        {"apiVersion": "v9", "cpuConfig": {"cpuset": "1"}})),
     "opaque.parameters.apiVersion: \"v9\" is not supported (must be v1alpha1)"),
    ("opaque without apiVersion", lambda u: claim(u, "cpudevnuma000", "1", opaque({"cpuConfig": {"cpuset": "1"}})),
     "opaque.parameters.apiVersion: missing (must be v1alpha1)"),
    ("opaque unknown policy key", lambda u: claim(u, "cpudevnuma000", "1", opaque(
        {"apiVersion": "v1alpha1", "policy": {"fullPCPUs": True}})), "policy.fullPCPUs: unknown placement key"),
    ("cpuConfig from the DeviceClass", lambda u: claim(u, "cpudevnuma000", "1", opaque(
        {"apiVersion": "v1alpha1", "cpuConfig": {"cpuset": "1"}}, source="FromClass")),
     "a cpuConfig from the DeviceClass is not allowed"),
]


def main():
    build = sys.argv[1]
    node = Node(build, None, write_sysfs=lambda root: write_tree(root, 2, 8, 2, 1))
    try:
        config = os.path.join(node.tmp, "config.yaml")
        with open(config, "w") as f:
            f.write("minSharedCPUs: 4\n")
        node.start_agent(extra_args=["--config", config])
        rc, _ = node.kubelet_cmd("register")
        check(rc == 0, "kubelet registers the plugin")

        def capacities():
            items = json.loads(http_get(node.url + "/apis/resource.k8s.io/v1/resourceslices")[1])["items"]
            return {d["name"]: d["capacity"]["dra.cpu/cpu"]["value"] for s in items for d in s["spec"]["devices"]}
        wait_for(lambda: capacities() == {"cpudevnuma000": "12", "cpudevnuma001": "16"},
                 "cpudevnuma000 (12 CPUs, 4 kept for the floor) and cpudevnuma001 (16) published")

        def shm_uids():
            return {c["uid"] for c in node.shm_dump()["claims"]}

        def ref(u):
            return "default/claim-%s/%s" % (u, u)

        held = uid(0)
        http_post(node.url + "/_sim/resourceclaims", claim(held, "cpudevnuma001", "2", cpuset("8,24")))
        rc, out = node.kubelet_cmd("prepare", ref(held))
        check(rc == 0 and spec_cpus(node, held) == {8, 24}, "a claim with cpuset 8,24 is prepared: %s" % out)

        cases = CASES + [("wrong uid", None, "the API server has uid")]
        for n, (name, build_claim, expected) in enumerate(cases, start=1):
            bad, good = uid(n, 1), uid(n, 2)
            if build_claim is None:  # wrong uid: the API server has this name under another uid
                http_post(node.url + "/_sim/resourceclaims", dict(claim(uid(n, 3), "cpudevnuma000", "1"),
                          metadata={"namespace": "default", "name": "claim-" + bad, "uid": uid(n, 3)}))
            else:
                http_post(node.url + "/_sim/resourceclaims", build_claim(bad))
            http_post(node.url + "/_sim/resourceclaims", claim(good, "cpudevnuma000", "1"))
            rc, out = node.kubelet_cmd("prepare", ref(bad), ref(good))
            err = out.get(bad, {}).get("error", "")
            check(rc == 1 and expected in err, "%s: refused with \"%s\": %s" % (name, expected, err))
            check(err.startswith("claim default/claim-%s (uid %s): " % (bad, bad)), "%s: the error names the claim" % name)
            check(spec_cpus(node, bad) is None and bad not in shm_uids() and uid(n, 3) not in shm_uids(),
                  "%s: no CDI spec, nothing in shared memory" % name)
            check(out.get(good, {}).get("error") == "" and len(spec_cpus(node, good) or ()) == 1 and
                  good in shm_uids(), "%s: the good claim of the same call is prepared" % name)
            rc, out = node.kubelet_cmd("unprepare", ref(bad), ref(good))
            check(rc == 0, "%s: both unprepared (the refused one is unknown: success)" % name)
        check(shm_uids() == {held} and spec_cpus(node, held) == {8, 24}, "only the first claim is left, on 8,24")

        other = uid(90)
        http_post(node.url + "/_sim/resourceclaims", with_results(claim(other, "cpudevnuma000", "1"), [
            {"request": "gpus", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu0"}]))
        rc, out = node.kubelet_cmd("prepare", ref(other))
        check(rc == 0 and out[other] == {"devices": [], "error": ""},
              "a claim with only another driver's results: success, no devices: %s" % out)
        check(spec_cpus(node, other) is None and other not in shm_uids(), "... and no CDI spec, no reservation")

        # A CPU unplugged after start-up: cpu/online is read at each Prepare.
        online = os.path.join(node.root, "sys/devices/system/cpu/online")
        with open(online, "w") as f:
            f.write("0-14,16-30\n")
        unplugged, grouped = uid(95), uid(96)
        http_post(node.url + "/_sim/resourceclaims", claim(unplugged, "cpudevnuma001", "2", cpuset("15,31")))
        http_post(node.url + "/_sim/resourceclaims", claim(grouped, "cpudevnuma001", "12"))
        rc, out = node.kubelet_cmd("prepare", ref(unplugged), ref(grouped))
        check(rc == 1 and "cpuConfig.cpuset CPUs 15,31 are offline" in out[unplugged]["error"],
              "a cpuset naming CPUs that went offline is refused: %s" % out[unplugged]["error"])
        got = spec_cpus(node, grouped) or set()
        check(out[grouped]["error"] == "" and len(got) == 12 and not got & {15, 31},
              "a grouped claim gets 12 CPUs of node 1 without the offline ones: %s" % sorted(got))
        rc, out = node.kubelet_cmd("unprepare", ref(unplugged), ref(grouped))
        check(rc == 0 and shm_uids() == {held}, "both unprepared")
        with open(online, "w") as f:
            f.write("0-31\n")

        # The shared-pool floor: 2 + 14 + 11 = 27 of 32 CPUs claimed leaves 5 shared.
        fill1, fill0, over, fits = uid(91), uid(92), uid(93), uid(94)
        http_post(node.url + "/_sim/resourceclaims", claim(fill1, "cpudevnuma001", "14"))
        http_post(node.url + "/_sim/resourceclaims", claim(fill0, "cpudevnuma000", "11"))
        rc, out = node.kubelet_cmd("prepare", ref(fill1), ref(fill0))
        check(rc == 0, "27 CPUs claimed: %s" % out)
        http_post(node.url + "/_sim/resourceclaims", claim(over, "cpudevnuma000", "2"))
        http_post(node.url + "/_sim/resourceclaims", claim(fits, "cpudevnuma000", "1"))
        rc, out = node.kubelet_cmd("prepare", ref(over), ref(fits))
        err = out[over]["error"]
        check(rc == 1 and "in the shared pool, below minSharedCPUs 4" in err and "would leave 3 CPUs" in err,
              "a claim taking the shared pool to 3 < minSharedCPUs 4 is refused: %s" % err)
        check(spec_cpus(node, over) is None and over not in shm_uids(), "floor: no CDI spec, nothing reserved")
        check(out[fits]["error"] == "" and len(spec_cpus(node, fits)) == 1,
              "floor: the 1-CPU claim of the same call is granted (4 shared CPUs left)")
        check(node.shm_verify().returncode == 0, "dracpu-shm verify passes")
        status, metrics = http_get(node.http + "/metrics")
        check('dra_cpu_prepare_claims_total{result="error"} %d' % (len(cases) + 2) in metrics,
              "/metrics counts every refused claim")

        rc, out = node.kubelet_cmd("unprepare", *(ref(u) for u in (held, fill1, fill0, fits, other)))
        check(rc == 0 and not shm_uids(), "all unprepared; shared memory empty")
        check(not [f for f in os.listdir(node.cdi) if f.startswith("dra.k8s.io-cpu_claim-")], "no CDI spec left")
        print("dra-agent bad claims e2e: all checks passed")
        return 0
    except Fail as e:
        print("FAIL:", e)
        log = os.path.join(node.tmp, "agent.log")
        if os.path.exists(log):
            print("--- agent log (tail) ---\n" + open(log).read()[-6000:])
        return 1
    finally:
        node.cleanup()


if __name__ == "__main__":
    sys.exit(main())
