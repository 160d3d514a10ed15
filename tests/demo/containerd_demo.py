#!/usr/bin/python3
"""make demo RUNTIME=containerd: the demo's story on REAL containerd, on this machine's CPUs.

containerd 2.1.9 (Debian sid; RUNTIME_SUITE=trixie for 1.7.24) runs from the real-runtime
suite's chroot (tests/realrt: made on the first run in $DRACPU_REALRT_CACHE, reused after) with
NRI and CDI on and runc on cgroupfs; both dracpu agents run on the host, the dra-agent on this
machine's sysfs behind the apiserver and kubelet simulators. Pods and containers are created
through CRI as the kubelet does, and what is shown is the kernel's: each container's cgroup
cpuset.cpus and its process's Cpus_allowed_list. Everything is stopped, unmounted and removed at
the end, also on Ctrl-C and SIGTERM. Root only.

Usage: containerd_demo.py BUILD_DIR [--suite sid|trixie]
"""
import argparse
import os
import signal
import sys
import tempfile
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "realrt"))
import realrt  # noqa: E402
from realrt import fmt, read  # noqa: E402

BOLD, DIM, END = ("\033[1m", "\033[2m", "\033[0m") if sys.stdout.isatty() else ("", "", "")
UID_A = "aaaaaaaa-0000-4000-8000-00000000000a"
UID_FORGED = "dddddddd-0000-4000-8000-00000000000d"


def say(title):
    print("\n" + BOLD + "== " + title + END, flush=True)


def note(text):
    print(DIM + text + END, flush=True)


class Interrupted(Exception):
    pass


def show(cri, names):
    print("  %-8s %-9s %-12s %-18s %s" % ("container", "pod", "cgroup cpus", "Cpus_allowed_list",
                                          "cgroup"))
    for name, (pod, cid) in names.items():
        pid = cri.pid(cid)
        path = next(line.split(":", 2)[2] for line in read("/proc/%d/cgroup" % pid).splitlines()
                    if ":cpuset:" in line)
        cg, allowed, _ = cri.kernel(cid)
        print("  %-8s %-9s %-12s %-18s /sys/fs/cgroup/cpuset%s" % (
            name, pod, fmt(cg), fmt(allowed), path[:40] + ("..." if len(path) > 40 else "")))


def story(rt):
    cri, node = rt.cri, rt.node
    online = realrt.cpulist(read("/sys/devices/system/cpu/online").strip())
    say("1. %s from Debian, both dracpu agents on this machine (CPUs %s)" % (rt.version, fmt(online)))
    note("CRI %s at %s; NRI plugin 00-dra.cpu synchronized; CDI specs in %s" % (
        cri.version(), rt.containerd.socket, rt.cdi_dir))
    names = {}

    say("2. A pod without claims: its container is confined to the shared pool")
    cri.run_pod("web")
    names["web"] = ("web", cri.create("web", "web"))
    show(cri, names)

    say("3. Claim A (1 CPU) prepared through the kubelet's DRA gRPC")
    node.add_claim(UID_A, "cpudevnuma000", 1)
    out = node.prepare(UID_A)[UID_A]
    if out["error"]:
        raise RuntimeError("Prepare: " + out["error"])
    cdi = out["devices"][0]["cdiDeviceIds"]
    cpus_a = node.claim_cpus(UID_A)
    print("  Prepare answered CDI device %s; the claim holds CPU %s" % (cdi[0], fmt(cpus_a)))
    note("  running shared containers keep that CPU until the claim's container is created")

    say("4. The claim's pod: CreateContainer with CDI_devices=%s" % cdi)
    cri.run_pod("pod-a")
    names["app-a"] = ("pod-a", cri.create("pod-a", "app", cdi=cdi))
    _, _, env = cri.kernel(names["app-a"][1])
    print("  env injected through CDI: %s" % env)
    print("  the shared container shrank in the same CreateContainer's reply:")
    show(cri, names)

    say("5. A pod that sets DRA_CPUSET_ itself is refused")
    cri.run_pod("forged")
    try:
        cri.create("forged", "x", env=["DRA_CPUSET_%s=%s" % (UID_FORGED, fmt(online))],
                   start=False)
        print("  accepted?!")
    except cri.grpc.RpcError as e:
        print("  CreateContainer failed: %s" % e.details().split("desc = ")[-1])

    say("6. The claim's pod ends: container stopped and removed, claim A unprepared")
    cri.stop(names["app-a"][1])
    cri.remove(names["app-a"][1])
    del names["app-a"]
    released = node.unprepare(UID_A)[UID_A]
    if released["error"]:
        raise RuntimeError("unprepare of claim A: %s" % released["error"])
    print("  shared pool is %s again; the running shared container still has:" %
          fmt(node.shared_pool()))
    show(cri, names)
    note("  (no unsolicited update: containerd <= 2.1 can deadlock on them)")

    say("7. The next container event on the node widens every shared container back")
    cri.run_pod("web2")
    names["web2"] = ("web2", cri.create("web2", "web"))
    show(cri, names)
    say("8. Done: pods removed through CRI, containerd stopped, chroot unmounted, cgroups removed")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build_dir")
    ap.add_argument("--suite", default=os.environ.get("RUNTIME_SUITE") or "sid",
                    choices=("sid", "trixie"))
    args = ap.parse_args()
    if os.getuid() != 0:
        print("demo RUNTIME=containerd: needs root (chroot, mounts, cgroups)")
        return 2
    if not realrt.prepare_cache([args.suite]):
        return 2

    def on_signal(signum, _frame):
        raise Interrupted(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    work = tempfile.mkdtemp(prefix="dracpu-demo-cri-")
    rt = None
    try:
        pb, pb_grpc = realrt.cri_client(work)
        # Made before it starts, so that a start that fails or is interrupted half-way is still
        # taken down (stop() undoes whatever start() did).
        rt = realrt.RealRuntime(os.path.abspath(args.build_dir), args.suite, pb, pb_grpc)
        rt.start()
        story(rt)
        return 0
    except Interrupted as e:
        print("\ndemo: %s, cleaning up" % e)
        return 130
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if rt is not None:
            left = rt.stop()
            if left:
                print("demo: cgroups left: %s" % left)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
