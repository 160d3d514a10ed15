#!/usr/bin/env python3
"""The dra-agent in every device mode, with the real binaries and the simulators (issue 6 item 9;
dra_agent_e2e.py covers grouped numanode): grouped by socket, grouped by machine, and individual.
For each: the agent publishes that mode's devices, the kubelet simulator prepares a claim on
them, the CDI spec holds the right CPUs, and Unprepare releases them.

Usage: dra_agent_modes_e2e.py BUILD_DIR   (env DRACPU_SHARED_DIR). Exit 77 = skipped.
"""
import json
import os
import signal
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dra_agent_e2e import Node, Fail, check, claim, cpulist, spec_cpus, http_get, http_post, wait_for  # noqa: E402

NODE0 = cpulist("0-7,16-23")  # socket 0 = NUMA node 0 on the Skylake-SP machine


def individual_claim(uid, devices):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"namespace": "default", "name": "claim-" + uid, "uid": uid},
            "status": {"allocation": {"devices": {"results": [
                {"request": "cpus", "driver": "dra.cpu", "pool": "node-1", "device": d} for d in devices]}}}}


def slice_devices(node):
    items = json.loads(http_get(node.url + "/apis/resource.k8s.io/v1/resourceslices")[1])["items"]
    return sorted(d["name"] for s in items for d in s["spec"]["devices"])


def main():
    build = sys.argv[1]
    shared = os.environ.get("DRACPU_SHARED_DIR", "")
    if not os.path.isdir(os.path.join(shared, "sysfs-corpus")):
        print("../shared (DRACPU_SHARED_DIR) is absent: modes e2e skipped")
        return 77
    node = Node(build, shared)
    try:
        cases = [
            ("socket", ["--group-by", "socket"], "cpudevsocket000", "6", None),
            ("machine", ["--group-by", "machine"], "cpudevmachine", "6", None),
            ("individual", ["--cpu-device-mode", "individual"], None, None, ["cpudev000", "cpudev001"]),
        ]
        for i, (mode, args, device, count, devices) in enumerate(cases):
            uid = "dddddddd-0000-4000-8000-%012d" % i
            node.start_agent(extra_args=args)
            rc, _ = node.kubelet_cmd("register")
            check(rc == 0, mode + ": registered")
            if devices is None:
                wait_for(lambda: device in slice_devices(node), mode + ": device " + device + " published")
                http_post(node.url + "/_sim/resourceclaims", claim(uid, device, count))
            else:
                wait_for(lambda: len(slice_devices(node)) == 31, mode + ": 31 devices published (one CPU is the floor)")
                http_post(node.url + "/_sim/resourceclaims", individual_claim(uid, devices))
            rc, out = node.kubelet_cmd("prepare", "default/claim-%s/%s" % (uid, uid))
            check(rc == 0 and out[uid]["error"] == "", mode + ": claim prepared: %s" % out)
            cpus = spec_cpus(node, uid)
            if devices is None:
                check(cpus is not None and len(cpus) == int(count), mode + ": CDI spec holds %s CPUs: %s" % (count, cpus))
                if mode == "socket":
                    check(cpus <= NODE0, "socket: CPUs inside socket 0")
                check(all((c in cpus) == ((c + 16) % 32 in cpus) for c in cpus), mode + ": whole cores")
            else:
                # Individual: CPU 0 is the unpublished floor, so cpudev000/001 are CPU 1 and its sibling 17.
                check(cpus == {1, 17}, "individual: devices cpudev000, cpudev001 are CPUs 1 and 17: %s" % cpus)
            rc, out = node.kubelet_cmd("unprepare", "default/claim-%s/%s" % (uid, uid))
            check(rc == 0 and spec_cpus(node, uid) is None, mode + ": unprepared")
            node.agent.send_signal(signal.SIGTERM)
            check(node.agent.wait(timeout=20) == 0, mode + ": clean exit")
        print("dra-agent modes e2e: all checks passed")
        return 0
    except Fail as e:
        print("FAIL:", e)
        log = os.path.join(node.tmp, "agent.log")
        if os.path.exists(log):
            print("--- agent log (tail) ---\n" + open(log).read()[-5000:])
        return 1
    finally:
        node.cleanup()


if __name__ == "__main__":
    sys.exit(main())
