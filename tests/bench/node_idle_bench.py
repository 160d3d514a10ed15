#!/usr/bin/env python3
"""Idle cost and footprint of both real agents on one simulated node (issue 15, points 1 and 5).

    node_idle_bench.py BUILD_DIR [--window S] [--claims N] [--containers N] [--json FILE]

A synthetic 96-CPU machine (2 sockets x 24 cores x SMT2), both agents with the simulators
(tests/e2e/whole_node.py): N claims prepared in one NodePrepareResources call, N containers
(one exclusive per claim, the rest shared) created through the runtime simulator, the kubelet's
health stream open. Then nothing happens for the window, and per agent it reads:

  wakeups/s   times any of its threads was put on a CPU (the third field of every
              /proc/<pid>/task/<tid>/schedstat, summed): each one is a wakeup of the process
  CPU %       on-CPU time (first schedstat field, ns) over the window, as % of one core
  threads     /proc/<pid>/task entries
  RSS, PSS, Private_Dirty   /proc/<pid>/smaps_rollup, in MB

The baseline measured in the same run is `sleep` (a process blocked in the kernel for the whole
window): its wakeups are the floor a fully event-driven process reaches. The busiest threads
are listed with their wakeups and CPU, so a regression names its culprit. Nothing is asserted:
the script prints the figures with their targets and ratios and exits 0 (1 only when the node
cannot be set up).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import synthetic_sysfs  # noqa: E402
import whole_node  # noqa: E402

TARGET_WAKEUPS_PER_S = 2.0
TARGET_CPU_PERCENT = 0.05
TARGET_THREADS_TOTAL = 12
TARGET_PRIVATE_DIRTY_MB = 8.0


def tasks(pid):
    try:
        return os.listdir("/proc/%d/task" % pid)
    except OSError:
        return []


def sched(pid):
    """{tid: (comm, on_cpu_ns, timeslices)} for every thread of pid."""
    out = {}
    for tid in tasks(pid):
        base = "/proc/%d/task/%s/" % (pid, tid)
        try:
            with open(base + "schedstat") as f:
                ns, _, slices = f.read().split()[:3]
            with open(base + "comm") as f:
                comm = f.read().strip()
        except OSError:
            continue  # the thread ended meanwhile
        out[tid] = (comm, int(ns), int(slices))
    return out


def memory(pid):
    """RSS, PSS and Private_Dirty in MB from smaps_rollup."""
    fields = {}
    with open("/proc/%d/smaps_rollup" % pid) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and parts[2] == "kB":
                fields[parts[0].rstrip(":")] = int(parts[1]) / 1024.0
    return {"rss_mb": fields.get("Rss", 0), "pss_mb": fields.get("Pss", 0),
            "private_dirty_mb": fields.get("Private_Dirty", 0)}


def window_delta(before, after, seconds):
    ns = slices = 0
    per_thread = []
    for tid, (comm, ns1, s1) in after.items():
        comm0, ns0, s0 = before.get(tid, (comm, 0, 0))
        ns += ns1 - ns0
        slices += s1 - s0
        per_thread.append((s1 - s0, comm, tid, ns1 - ns0))
    per_thread.sort(reverse=True)
    return {"wakeups_per_s": slices / seconds, "cpu_percent": ns / seconds / 1e7,
            "busiest": ["%s/%s %.2f/s %.4f %%" % (c, t, n / seconds, cpu / seconds / 1e7)
                        for n, c, t, cpu in per_thread[:4] if n]}


def setup(build, tmp, claims, containers, log):
    root = os.path.join(tmp, "machine")
    synthetic_sysfs.write_tree(root, 2, 24, 2, 1)
    # A real API server sends a watch BOOKMARK about once a minute; the simulator's default of
    # one a second would be a wakeup of its own making. The agents' files (segment, sockets, CDI)
    # go on tmpfs, as under a node's /run; /tmp may be a disk, where the heartbeat's store into
    # the segment now and then faults to mark the page dirty again.
    node = whole_node.WholeNode(build, sysfs_root=root, log=log,
                                apiserver_args=("--bookmark-interval-ms", "60000"),
                                tmp_parent="/dev/shm" if os.path.isdir("/dev/shm") else "/tmp")
    node.start()
    uids = ["bench-claim-%02d" % i for i in range(claims)]
    for i, uid in enumerate(uids):
        node.add_claim(uid, "cpudevnuma%03d" % (i % 2), 2)
    r = node.prepare(*uids)
    bad = {u: v for u, v in r.items() if v.get("error")}
    if bad:
        raise RuntimeError("prepare failed: %s" % bad)
    for i in range(containers):
        claim = [uids[i]] if i < claims else []
        reply = node.create("c%04d" % i, "pod%04d" % i, claim_uids=claim)
        if not reply.get("ok"):
            raise RuntimeError("create c%04d: %s" % (i, reply))
    # The kubelet keeps a health stream open to the dra-agent for as long as both run.
    health = subprocess.Popen(
        [node._bin("tests/sim/kubelet/dracpu-sim-kubelet"), "--registry-dir",
         os.path.join(node.kubelet_dir, "plugins_registry"), "health", "1000000"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return node, health


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--window", type=float, default=60.0)
    ap.add_argument("--settle", type=float, default=3.0)
    ap.add_argument("--claims", type=int, default=8)
    ap.add_argument("--containers", type=int, default=500)
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    quiet = lambda *a: None  # noqa: E731
    tmp = tempfile.mkdtemp(prefix="dracpu-idle-bench-")
    health = None
    try:
        node, health = setup(args.build, tmp, args.claims, args.containers, quiet)
    except Exception as e:  # noqa: BLE001: report the setup failure and its logs
        print("node_idle_bench: setup failed: %s" % e)
        return 1
    try:
        time.sleep(args.settle)
        pids = {"dra-agent": node.procs["dra-agent"].pid, "nri-agent": node.procs["nri-agent"].pid}
        sleeper = subprocess.Popen(["sleep", str(args.window + 30)])
        time.sleep(0.2)
        pids["baseline (sleep)"] = sleeper.pid
        before = {n: sched(p) for n, p in pids.items()}
        t0 = time.monotonic()
        time.sleep(args.window)
        seconds = time.monotonic() - t0
        after = {n: sched(p) for n, p in pids.items()}
        result = {}
        for name, pid in pids.items():
            r = window_delta(before[name], after[name], seconds)
            r["threads"] = len(tasks(pid))
            r.update(memory(pid))
            result[name] = r
        sleeper.kill()
        sleeper.wait()
    finally:
        if health is not None:
            health.kill()
            health.wait()
        node.cleanup()
        subprocess.run(["rm", "-rf", tmp])

    print("Idle node: %d claims, %d containers (%d exclusive), health stream open, %.0f s window"
          % (args.claims, args.containers, args.claims, seconds))
    print("%-18s %10s %9s %8s %8s %8s %9s" %
          ("process", "wakeups/s", "CPU %", "threads", "RSS MB", "PSS MB", "PrivDirty"))
    for name, r in result.items():
        print("%-18s %10.2f %9.4f %8d %8.1f %8.1f %9.1f" %
              (name, r["wakeups_per_s"], r["cpu_percent"], r["threads"], r["rss_mb"], r["pss_mb"],
               r["private_dirty_mb"]))
    for name in ("dra-agent", "nri-agent"):
        r = result[name]
        print("%s: wakeups/s %.2f = %.2fx target %.0f; CPU %.4f %% = %.2fx target %.2f %%; "
              "busiest: %s" % (name, r["wakeups_per_s"], r["wakeups_per_s"] / TARGET_WAKEUPS_PER_S,
                               TARGET_WAKEUPS_PER_S, r["cpu_percent"],
                               r["cpu_percent"] / TARGET_CPU_PERCENT, TARGET_CPU_PERCENT,
                               ", ".join(r["busiest"]) or "none"))
    both = [result["dra-agent"], result["nri-agent"]]
    threads = sum(r["threads"] for r in both)
    dirty = sum(r["private_dirty_mb"] for r in both)
    print("both agents: threads %d (target <= %d), RSS %.1f MB, PSS %.1f MB, Private_Dirty %.1f MB "
          "(target <= %.0f MB)" % (threads, TARGET_THREADS_TOTAL, sum(r["rss_mb"] for r in both),
                                   sum(r["pss_mb"] for r in both), dirty, TARGET_PRIVATE_DIRTY_MB))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
