#!/usr/bin/env python3
"""100 claims prepared concurrently on a 1024-CPU machine, with the real dra-agent and the
simulators (issue 6 item 9).

The machine is synthetic (tests/e2e/synthetic_sysfs.py: 8 sockets x 64 cores x SMT2, one NUMA
node per socket, 8 L3 groups per socket, first threads 0-511 and siblings +512), so this test
needs no ../shared and never skips. Checked: gatherinfo reads the tree as 1024 CPUs, 512 cores,
8 NUMA nodes, 64 L3 groups; the agent publishes cpudevnuma000..007; 100 grouped claims of 1..16
CPUs spread over the 8 devices are prepared by 10 kubelet-simulator sessions at once (each
registered beforehand, then all sent one NodePrepareResources of 10 claims together, so 10 calls
are in flight at the same time); every claim gets exactly its
count, inside its device's NUMA node, no CPU is in two claims (the CDI specs the replies name, and
dracpu-shm dump), `dracpu-shm verify` passes, the shared-pool floor (minSharedCPUs) is left free;
then all are unprepared by 10 concurrent processes and the segment and the CDI directory are empty.

Usage: dra_agent_scale_e2e.py BUILD_DIR
"""
import json
import os
import random
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dra_agent_e2e import Node, Fail, check, claim, cpulist, spec_cpus, http_get, http_post, wait_for  # noqa: E402
from synthetic_sysfs import write_tree  # noqa: E402

CLAIMS = 100
WORKERS = 10
MIN_SHARED = 8


def uid_of(i):
    return "5ca1e000-0000-4000-8000-%012d" % i


SIZES = [random.Random(20261133000 + i).randint(1, 16) for i in range(CLAIMS)]  # fixed; 1..16, 782 CPUs, <= 110 per device


def main():
    build = sys.argv[1]
    machine = {}
    shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None  # 11k small files: tmpfs if we can
    node = Node(build, None, write_sysfs=lambda root: machine.update(write_tree(root, 8, 64, 2, 8)),
                sysfs_parent=shm)
    try:
        started = time.time()
        r = subprocess.run([os.path.join(build, "dra-agent/dracpu-dra-agent"), "gatherinfo", "--sysfs-root",
                            node.root, "--format", "json", "--no-pcie", "--no-agent"], capture_output=True, text=True)
        check(r.returncode == 0, "gatherinfo reads the synthetic tree: %s" % r.stderr[-500:])
        topo = json.loads(r.stdout)["topology"]
        check(len(topo["cpus"]) == 1024 and topo["online"] == "0-1023", "gatherinfo: 1024 online CPUs")
        check(len(topo["cores"]) == 512 and topo["threadsPerCore"] == 2, "gatherinfo: 512 cores of 2 threads")
        check(len(topo["packages"]) == 8 and len(topo["numaNodes"]) == 8, "gatherinfo: 8 sockets, 8 NUMA nodes")
        check(len(topo["l3Caches"]) == 64, "gatherinfo: 64 L3 groups")
        check(all(cpulist(n["cpus"]) == machine["numa"][n["id"]] for n in topo["numaNodes"]),
              "gatherinfo: NUMA node k = cores 64k..64k+63 and their siblings +512")
        check(not json.loads(r.stdout)["warnings"], "gatherinfo: no warnings")
        r = subprocess.run([os.path.join(build, "dra-agent/dracpu-dra-agent"), "gatherinfo", "--sysfs-root",
                            node.root, "--format", "summary", "--no-pcie", "--no-agent"], capture_output=True, text=True)
        check(r.returncode == 0 and "online 0-1023 (1024)" in r.stdout and "threads per core: 2" in r.stdout,
              "gatherinfo summary: %s" % r.stdout.strip()[:300])

        config = os.path.join(node.tmp, "config.yaml")
        with open(config, "w") as f:
            f.write("minSharedCPUs: %d\n" % MIN_SHARED)
        node.start_agent(extra_args=["--config", config])
        rc, reg = node.kubelet_cmd("register")
        check(rc == 0, "kubelet registers the plugin")

        def devices():
            items = json.loads(http_get(node.url + "/apis/resource.k8s.io/v1/resourceslices")[1])["items"]
            return {d["name"]: d for s in items for d in s["spec"]["devices"]}
        wait_for(lambda: len(devices()) == 8, "8 NUMA devices published", timeout=30)
        capacity = {n: int(d["capacity"]["dra.cpu/cpu"]["value"]) for n, d in devices().items()}
        check(capacity["cpudevnuma000"] == 128 - MIN_SHARED and
              all(capacity["cpudevnuma%03d" % k] == 128 for k in range(1, 8)),
              "capacities: 128 each, the floor taken from cpudevnuma000: %s" % capacity)

        device = {uid_of(i): "cpudevnuma%03d" % (i % 8) for i in range(CLAIMS)}
        size = {uid_of(i): SIZES[i] for i in range(CLAIMS)}
        for k in range(8):  # the test's own arithmetic: the scheduler would have accepted these
            used = sum(size[u] for u in device if device[u] == "cpudevnuma%03d" % k)
            assert used <= capacity["cpudevnuma%03d" % k], (k, used)
        for u in device:
            http_post(node.url + "/_sim/resourceclaims", claim(u, device[u], str(size[u])))
        refs = ["default/claim-%s/%s" % (u, u) for u in device]
        batches = [refs[w::WORKERS] for w in range(WORKERS)]  # each batch mixes devices and sizes

        # One kubelet-simulator session per worker. All register and answer a probe first, then
        # every worker is sent its whole NodePrepareResources (or Unprepare) call at once, so the
        # 10 calls really are in flight together.
        def run_all(verb):
            procs = [subprocess.Popen([os.path.join(build, "tests/sim/kubelet/dracpu-sim-kubelet"),
                                       "--registry-dir", os.path.join(node.kubelet, "plugins_registry"),
                                       "--timeout-ms", "30000", "session"],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True) for _ in batches]
            try:
                for p in procs:
                    p.stdin.write("probe\n")
                    p.stdin.flush()
                for p in procs:
                    line = p.stdout.readline()
                    if json.loads(line or "{}").get("probe") != "ok":
                        raise Fail("%s worker did not register: %r" % (verb, line))
                for p, b in zip(procs, batches):
                    p.stdin.write("%s %s\n" % (verb, " ".join(b)))
                    p.stdin.flush()
                replies = {}
                for p in procs:
                    line = p.stdout.readline()
                    if not line.strip():
                        raise Fail("%s worker gave no reply: %s" % (verb, p.stderr.read()[-1000:]))
                    replies.update(json.loads(line))
                return replies
            finally:
                for p in procs:
                    p.stdin.close()
                    p.wait(timeout=30)

        t0 = time.time()
        replies = run_all("prepare")
        prepare_s = time.time() - t0
        check(sorted(replies) == sorted(device), "every claim answered")
        check(all(r["error"] == "" for r in replies.values()), "no claim refused")
        check(all([d["deviceName"] for d in replies[u]["devices"]] == [device[u]] and
                  replies[u]["devices"][0]["cdiDeviceIds"][0] == "dra.k8s.io/cpu=claim-" + u and
                  replies[u]["devices"][0]["cdiDeviceIds"][1].startswith("dra.cpu/metadata=" + u + "_")
                  for u in device),
              "each reply names its device, its CDI id and its metadata CDI id")

        held = {}
        for u in device:
            cpus = spec_cpus(node, u)
            if cpus is None or len(cpus) != size[u]:
                raise Fail("claim %s: CDI spec holds %s, want %d CPUs" % (u, cpus, size[u]))
            numa = machine["numa"][int(device[u][-3:])]
            if not cpus <= numa:
                raise Fail("claim %s: CPUs %s outside %s" % (u, sorted(cpus - numa), device[u]))
            held[u] = cpus
        print("ok: 100 CDI specs, each with exactly its count inside its device's NUMA node")
        union = set().union(*held.values())
        check(len(union) == sum(size.values()), "no CPU in two claims (CDI specs)")

        dump = node.shm_dump()
        claims = {c["uid"]: c for c in dump["claims"]}
        check(sorted(claims) == sorted(device), "shared memory holds the 100 claims")
        check(all(cpulist(claims[u]["cpus"]) == held[u] and claims[u]["state"] == "prepared" for u in device),
              "shared memory: each claim prepared, with its CDI spec's CPUs")
        check(all(claims[u]["mems"] == str(int(device[u][-3:])) for u in device), "each claim's mems = its NUMA node")
        free = cpulist(dump["cpus"]["allocatable"]) - union
        check(len(free) >= MIN_SHARED, "the shared-pool floor held: %d CPUs unclaimed (minSharedCPUs %d)"
              % (len(free), MIN_SHARED))
        v = node.shm_verify()
        check(v.returncode == 0, "dracpu-shm verify passes: %s" % (v.stdout + v.stderr)[-500:])
        status, metrics = http_get(node.http + "/metrics")
        check('dra_cpu_prepare_claims_total{result="success"} 100' in metrics, "/metrics counts 100 prepares")
        check("dra_cpu_allocated_cpus %d" % len(union) in metrics, "/metrics: %d allocated CPUs" % len(union))

        # Idempotent under concurrency too: the same 100 Prepares again give the same CPUs.
        replies = run_all("prepare")
        check(all(r["error"] == "" for r in replies.values()) and all(spec_cpus(node, u) == held[u] for u in device),
              "a second concurrent round of Prepares returns the same CPUs")

        t0 = time.time()
        replies = run_all("unprepare")
        unprepare_s = time.time() - t0
        check(sorted(replies) == sorted(device) and all(e == "" for e in replies.values()), "all 100 unprepared")
        check(not node.shm_dump()["claims"], "shared memory has no claim left")
        left = [f for f in os.listdir(node.cdi) if f.startswith("dra.k8s.io-cpu_claim-")]
        check(not left, "the CDI directory has no claim spec left: %s" % left[:5])
        check(node.shm_verify().returncode == 0, "dracpu-shm verify passes after the release")
        print("dra-agent scale e2e: all checks passed (prepare %.2f s, unprepare %.2f s, total %.1f s)"
              % (prepare_s, unprepare_s, time.time() - started))
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
