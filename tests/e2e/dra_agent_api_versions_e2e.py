#!/usr/bin/env python3
"""The real dra-agent against the apiserver simulator at other Kubernetes versions (issue 13):

1. Kubernetes 1.34 (no consumable capacity, no list attributes), with --expose-pcie-roots: the
   agent probes, publishes grouped devices without requestPolicy / allowMultipleAllocations and
   pcieRoot as a single string where a device has one root; no real write is refused or loses a
   field; /debug/resourceslices and gatherinfo say what was left out and why. A claim allocated
   the way that scheduler does (the whole device, no consumedCapacity) is prepared with every CPU
   the device publishes, then unprepared.
2. A cluster that refuses every slice (a node name that is not a DNS subdomain): /readyz is 503
   with the server's cause, dra_cpu_resourceslice_publish_errors_total{code="422",reason="Invalid"}
   counts, each cause is logged once, gatherinfo shows it, and retries back off (a handful of
   writes in 12 s, not one every half second).

Usage: dra_agent_api_versions_e2e.py BUILD_DIR   (env DRACPU_SHARED_DIR). Exit 77 = skipped.
"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dra_agent_e2e import Node, Fail, check, claim, cpulist, spec_cpus, http_get, http_post, wait_for  # noqa: E402

NODE1 = cpulist("8-15,24-31")  # NUMA node 1 of the Skylake-SP machine (dra_agent_e2e.MACHINE)
SLICES = "/apis/resource.k8s.io/v1/resourceslices"


def whole_device_claim(uid, device):
    c = claim(uid, device, "0")
    del c["status"]["allocation"]["devices"]["results"][0]["consumedCapacity"]
    return c


def slice_writes(node):
    """The non-dry-run POST/PUT requests on ResourceSlices the simulator answered, with status."""
    reqs = json.loads(http_get(node.url + "/_sim/requests")[1])
    return [r for r in reqs if r["method"] in ("POST", "PUT") and r["path"].startswith(SLICES)
            and "dryRun" not in r["query"]]


def print_log(node):
    log = os.path.join(node.tmp, "agent.log")
    if os.path.exists(log):
        print("--- agent log ---\n" + open(log).read()[-6000:])


def gatherinfo(node, fmt):
    r = subprocess.run([os.path.join(node.build, "dra-agent/dracpu-dra-agent"), "gatherinfo",
                        "--sysfs-root", node.root, "--format", fmt, "--agent", node.http],
                       capture_output=True, text=True, timeout=30)
    check(r.returncode == 0, "gatherinfo exits 0: %s" % r.stderr[-300:])
    return r.stdout


def old_cluster(build, shared):
    node = Node(build, shared, api_args=["--kube-version", "1.34"])
    try:
        uid = "13131313-aaaa-4bbb-8ccc-000000000001"
        http_post(node.url + "/_sim/resourceclaims", whole_device_claim(uid, "cpudevnuma001"))
        node.start_agent(extra_args=["--expose-pcie-roots"])
        rc, _ = node.kubelet_cmd("register")
        check(rc == 0, "kubelet registers the plugin")
        wait_for(lambda: http_get(node.http + "/readyz")[0] == 200, "/readyz 200 on Kubernetes 1.34")
        items = json.loads(http_get(node.url + SLICES)[1])["items"]
        devices = {d["name"]: d for s in items for d in s["spec"]["devices"]}
        check(sorted(devices) == ["cpudevnuma000", "cpudevnuma001"], "both NUMA devices published")
        for name, d in devices.items():
            check("allowMultipleAllocations" not in d and "requestPolicy" not in d["capacity"]["dra.cpu/cpu"],
                  "%s: no requestPolicy / allowMultipleAllocations on 1.34" % name)
            root = d["attributes"].get("resource.kubernetes.io/pcieRoot")
            check(root is None or set(root) == {"string"}, "%s: pcieRoot a single string or absent: %s" % (name, root))
        writes = slice_writes(node)
        check(writes and all(200 <= w["status"] < 300 for w in writes),
              "every real slice write accepted: %s" % [w["status"] for w in writes])
        state = json.loads(http_get(node.http + "/debug/resourceslices")[1])
        features = state["server"]["features"]
        check(features["DRAConsumableCapacity"]["state"] == "dropped", "agent learned: no consumable capacity")
        check(features["DRAListTypeAttributes"]["state"] == "dropped", "agent learned: no list attributes")
        check(state["server"]["version"] == "v1.34.0-dracpu-sim", "server version recorded: %s" % state["server"])
        check(any("requestPolicy and allowMultipleAllocations left out" in n for n in state["shapeNotes"]),
              "the shape note says the policy is left out: %s" % state["shapeNotes"])
        check(state["droppedFields"] == 0 and not state["errors"], "no field dropped, no error")
        summary = gatherinfo(node, "summary")
        check("note: requestPolicy and allowMultipleAllocations left out" in summary and
              "DRAConsumableCapacity dropped" in summary, "gatherinfo shows the shape: %s" % summary[-800:])
        log = open(os.path.join(node.tmp, "agent.log")).read()
        check("ResourceSlices: requestPolicy and allowMultipleAllocations left out" in log,
              "the log says what the shape leaves out")

        rc, out = node.kubelet_cmd("prepare", "default/claim-%s/%s" % (uid, uid))
        check(rc == 0 and out[uid]["error"] == "", "whole-device claim prepared: %s" % out)
        cpus = spec_cpus(node, uid)
        check(cpus == NODE1, "the whole device: every CPU of NUMA node 1 (%s)" % sorted(cpus or []))
        rc, out = node.kubelet_cmd("unprepare", "default/claim-%s/%s" % (uid, uid))
        check(rc == 0 and spec_cpus(node, uid) is None, "whole-device claim unprepared")
        print("ok: Kubernetes 1.34: adapted shape, whole-device claim")
    except Fail:
        print_log(node)
        raise
    finally:
        node.cleanup()


def refusing_cluster(build, shared):
    node = Node(build, shared, api_args=["--node", "node_1=uid-node-bad"])
    try:
        node.start_agent(node_name="node_1")  # "_": not a DNS subdomain
        rc, _ = node.kubelet_cmd("register")
        check(rc == 0, "kubelet registers the plugin")
        wait_for(lambda: "refused" in http_get(node.http + "/readyz")[1], "/readyz to report the refusal")
        started = time.time()
        status, body = http_get(node.http + "/readyz")
        check(status == 503 and "ResourceSlices refused by the API server" in body and
              "422 Invalid: spec.nodeName" in body, "/readyz 503 with the cause: %s" % body)
        status, metrics = http_get(node.http + "/metrics")
        check('dra_cpu_resourceslice_publish_errors_total{code="422",reason="Invalid"}' in metrics,
              "/metrics counts the refused writes")
        summary = gatherinfo(node, "summary")
        check("REFUSED by the API server" in summary and "spec.nodeName" in summary,
              "gatherinfo shows the refusal: %s" % summary[-600:])
        time.sleep(max(0, 12 - (time.time() - started)))
        reqs = json.loads(http_get(node.url + "/_sim/requests")[1])
        posts = [r for r in reqs if r["method"] == "POST" and r["path"].startswith(SLICES)]
        check(2 <= len(posts) <= 12, "retries back off: %d slice POSTs in ~12 s" % len(posts))
        log = open(os.path.join(node.tmp, "agent.log")).read()
        lines = [l for l in log.splitlines() if "ResourceSlice write failed" in l and "spec.nodeName" in l]
        check(len(lines) == 1, "the spec.nodeName cause is logged once, not per retry: %d lines" % len(lines))
        m = [l for l in metrics.splitlines() if l.startswith('dra_cpu_resourceslice_publish_errors_total{code="422"')]
        print("ok: refused slices visible (%s; %d POSTs in 12 s)" % (m[0] if m else "?", len(posts)))
    except Fail:
        print_log(node)
        raise
    finally:
        node.cleanup()


def main():
    build = sys.argv[1]
    shared = os.environ.get("DRACPU_SHARED_DIR", "")
    if not os.path.isdir(os.path.join(shared, "sysfs-corpus")):
        print("../shared (DRACPU_SHARED_DIR) is absent: e2e test skipped")
        return 77
    try:
        old_cluster(build, shared)
        refusing_cluster(build, shared)
    except Fail as e:
        print("FAIL:", e)
        return 1
    print("api versions e2e: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
