#!/usr/bin/env python3
"""make demo: one whole dracpu node, run locally against simulators, telling what dracpu does.

Both real agents run (tests/e2e/whole_node.py starts them): the dra-agent behind the
kube-apiserver and kubelet simulators, the nri-agent as the plugin of the container runtime
simulator. Everything lives on private sockets and paths under one temp dir (never the host's
kubelet, runtime or /run/dracpu) and everything is stopped and removed at the end, also on
Ctrl-C (SIGINT) and SIGTERM.

When the node is this machine (sysfs root "/") and every CPU it publishes is usable here, each
container gets a real process (a `sleep` child of the demo) that the runtime simulator pins
with sched_setaffinity (--apply-affinity) and, as root on a cgroup v1 cpuset hierarchy, also
puts it in a cgroup cpuset of its own as runc would (--cgroup-parent, under a
dracpu-demo-<pid> group the demo makes and removes); the demo shows its Cpus_allowed_list
and its cgroup. On a recorded
machine the CPUs are not this machine's, so the cpusets are shown as the runtime applied them
and no process is pinned.

Usage: node_demo.py BUILD_DIR (--sysfs-root DIR | --machine NAME)
       env DRACPU_SHARED_DIR: ../shared (the sysfs corpus for --machine)
"""
import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from whole_node import MODERN_RUNTIME, WholeNode, cpulist, fmt  # noqa: E402

CPUSET_ROOT = "/sys/fs/cgroup/cpuset"  # a cgroup v1 cpuset hierarchy

BOLD, DIM, END = ("\033[1m", "\033[2m", "\033[0m") if sys.stdout.isatty() else ("", "", "")
UID_A = "aaaaaaaa-0000-4000-8000-00000000000a"
UID_B = "bbbbbbbb-0000-4000-8000-00000000000b"
FULL_CORES = {"apiVersion": "v1alpha1", "policy": {"fullPCPUsOnly": True}}
MIN_SHARED = 1  # the dra-agent's default minSharedCPUs (docs/claims.md)


def say(title):
    print("\n" + BOLD + "== " + title + END, flush=True)


def note(text):
    print(DIM + text + END, flush=True)


def ncpus(k):
    return "1 CPU" if k == 1 else "%d CPUs" % k


def numa_of(device):
    """cpudevnuma001 -> "1" (the default grouping's device names)."""
    return str(int(device[len("cpudevnuma"):])) if device.startswith("cpudevnuma") else "?"


def own_children():
    me, out = os.getpid(), []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == me:
                        out.append(int(d))
            except (OSError, ValueError, IndexError):
                pass
    return out


class Interrupted(Exception):
    pass


def _die_with_parent():
    # The sleep children die with the demo even if it is SIGKILLed (PR_SET_PDEATHSIG = 1).
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)


class Demo:
    def __init__(self, build, sysfs_root, machine, shared):
        self.build = os.path.abspath(build)
        self.machine = machine
        self.shared = shared
        self.sysfs_root = sysfs_root
        self.node = None
        self.sleepers = {}  # container id -> Popen of its `sleep` process
        self.pinning = False
        self.cgroup_parent = None  # where the runtime simulator makes container cgroups
        self.cgroup_made = None    # the group the demo made (removed at clean-up)
        self.started = time.time()
        self.done = False
        self.stopping = False  # set once the clean-up is due: later signals are ignored

    # --- helpers -------------------------------------------------------------------------------

    def bin(self, rel):
        return os.path.join(self.build, rel)

    def gatherinfo(self, fmt_):
        # Before the node runs there is no segment: the node map is shown once claims are pinned.
        return subprocess.run([self.bin("dra-agent/dracpu-dra-agent"), "gatherinfo", "--sysfs-root",
                               self.node.sysfs_root, "--format", fmt_, "--no-map", "--no-agent"],
                              capture_output=True, text=True, check=True).stdout

    def show_map(self):
        """dracpu-shm map of the node: coloured on a terminal, plain otherwise."""
        tty = sys.stdout.isatty()
        width = shutil.get_terminal_size((80, 24)).columns if tty else 80
        cmd = [self.bin("shm-schema/dracpu-shm"), "map", "--path", self.node.shm_path,
               "--sysfs-root", self.node.sysfs_root]
        print(subprocess.run(cmd + ["--width", str(max(40, width)), "--color",
                                    "always" if tty and not os.environ.get("NO_COLOR") else "never"],
                             capture_output=True, text=True).stdout.rstrip())
        # make screenshots: the first map (both claims pinned) as a terminal shows it and as SVG.
        keep = os.environ.get("DRACPU_DEMO_MAP_DIR")
        if keep and not os.path.exists(os.path.join(keep, "map.svg")):
            for name, extra in (("map.ansi", ["--color", "always", "--width", "80"]),
                                ("map.svg", ["--format", "svg"])):
                with open(os.path.join(keep, name), "w") as f:
                    subprocess.run(cmd + extra, stdout=f, check=True)

    def sleeper(self, cid):
        if not self.pinning:
            return 0
        p = subprocess.Popen(["sleep", "600"], preexec_fn=_die_with_parent)
        self.sleepers[cid] = p
        return p.pid

    def end_sleeper(self, cid):
        p = self.sleepers.pop(cid, None)
        if p:
            p.kill()
            p.wait()

    def make_cgroup_parent(self):
        """A cpuset cgroup for the demo's containers (root, cgroup v1), or None."""
        if os.geteuid() != 0 or not os.access(os.path.join(CPUSET_ROOT, "cpuset.cpus"), os.W_OK):
            return None
        parent = os.path.join(CPUSET_ROOT, "dracpu-demo-%d" % os.getpid())
        try:
            os.mkdir(parent)
            self.cgroup_made = parent
            # A new v1 cpuset group starts empty: give it the root's CPUs and memory nodes.
            for name in ("cpuset.cpus", "cpuset.mems"):
                with open(os.path.join(CPUSET_ROOT, name)) as src, open(os.path.join(parent, name), "w") as dst:
                    dst.write(src.read().strip())
        except OSError as e:
            note("Cannot make a cpuset cgroup under %s (%s): no cgroup cpusets." % (CPUSET_ROOT, e))
            return None
        return parent

    @staticmethod
    def cgroup_of(pid):
        try:
            with open("/proc/%d/cpuset" % pid) as f:
                path = f.read().strip()
            with open(CPUSET_ROOT + path + "/cpuset.cpus") as f:
                return "%s=%s" % (os.path.basename(path), f.read().strip())
        except OSError:
            return "?"

    @staticmethod
    def allowed(pid):
        try:
            with open("/proc/%d/status" % pid) as f:
                for line in f:
                    if line.startswith("Cpus_allowed_list:"):
                        return line.split(":", 1)[1].strip()
        except OSError:
            pass
        return "?"

    def show_containers(self, indent="  "):
        rows = self.node.containers()
        last = "pid: Cpus_allowed_list" if self.pinning else ""
        print((indent + "%-10s %-14s %-8s %-22s %s" % ("container", "pod", "state", "cpuset", last)).rstrip())
        for cid, c in sorted(rows.items()):
            real = ""
            if self.pinning and c["pid"]:
                allowed = self.allowed(c["pid"])
                real = "%d: %s%s" % (c["pid"], allowed, "" if cpulist(allowed) == c["cpus"] else "  MISMATCH")
                if self.cgroup_parent:
                    real += "  (cgroup %s)" % self.cgroup_of(c["pid"])
            print((indent + "%-10s %-14s %-8s %-22s %s" % (cid, c["pod"], c["state"], fmt(c["cpus"]),
                                                          real)).rstrip())
        return rows

    def cdi_env(self, uid):
        path = os.path.join(self.node.cdi_dir, "dra.k8s.io-cpu_claim-%s.json" % uid)
        with open(path) as f:
            return json.load(f)["devices"][0]["containerEdits"]["env"][0]

    def slices(self):
        with urllib.request.urlopen(self.node.api_url + "/apis/resource.k8s.io/v1/resourceslices",
                                    timeout=5) as r:
            return json.loads(r.read())["items"]

    def shared_wait(self, cid, want, what):
        return self.node.wait_for(lambda: self.node.containers()[cid]["cpus"] == want, what, timeout=15)

    # --- the story -----------------------------------------------------------------------------

    def run(self):
        start = self.started
        if self.machine:
            notes = ""
            try:
                with open(os.path.join(self.shared, "sysfs-corpus", self.machine, "source.json")) as f:
                    notes = json.load(f).get("notes", "")
            except (OSError, ValueError):
                pass
            notes = notes.split(";")[0].split(". ")[0].rstrip(".")
            label = "recorded machine %s%s" % (self.machine, (" (" + notes + ")") if notes else "")
        elif os.path.abspath(self.sysfs_root) == "/":
            label = "this machine (/sys)"
        else:
            label = "the sysfs tree at " + self.sysfs_root
        real = not self.machine and os.path.abspath(self.sysfs_root) == "/"

        # WholeNode makes the temp dir at once; nothing runs yet. A recorded machine is extracted
        # into it here, in-process (no tar child to orphan if Ctrl-C comes in the middle).
        self.node = WholeNode(self.build, sysfs_root=self.sysfs_root or "/", shared_dir=self.shared,
                              tmp_prefix="dracpu-demo-", node_name="demo-node", log=lambda _: None)
        if self.machine:
            tree = os.path.join(self.node.tmp, "root")
            os.makedirs(tree)
            with tarfile.open(os.path.join(self.shared, "sysfs-corpus", self.machine, "tree.tar.gz")) as tf:
                tf.extractall(tree, **({"filter": "tar"} if hasattr(tarfile, "tar_filter") else {}))
            self.node.sysfs_root = tree
        say("1. The node: " + label)
        print(self.gatherinfo("summary").rstrip())
        info = json.loads(self.gatherinfo("json"))["topology"]
        online = cpulist(info["online"])
        tpc = info["threadsPerCore"]
        usable = os.sched_getaffinity(0)
        who = "root" if os.geteuid() == 0 else "uid %d (not root)" % os.geteuid()
        if real and online <= usable:
            self.pinning = True
            self.cgroup_parent = self.make_cgroup_parent()
            note("Running as %s. Real pinning: ON. Each container gets a real process (a `sleep` child\n"
                 "of the demo) that the runtime simulator pins with sched_setaffinity, which needs no\n"
                 "privilege for processes of one's own user." % who)
            if self.cgroup_parent:
                note("As root, the runtime simulator also gives each container a cgroup cpuset of its\n"
                     "own under %s, as runc does for containerd." % self.cgroup_parent)
            else:
                note("No cgroup cpusets: they need root and a writable cgroup v1 cpuset hierarchy at\n"
                     "%s." % CPUSET_ROOT)
        elif real:
            note("Running as %s. Real pinning: OFF. The node publishes CPUs %s but this process may\n"
                 "only use %s, so no process is pinned; the cpusets shown are what the runtime\n"
                 "simulator applied." % (who, fmt(online), fmt(usable)))
        else:
            note("Running as %s. Real pinning: OFF. This is not this machine's sysfs: its CPUs (%s)\n"
                 "are not the CPUs here (%s), so no process is pinned; the cpusets shown are what the\n"
                 "runtime simulator applied." % (who, fmt(online), fmt(usable)))

        say("2. A whole node on private sockets under " + self.node.tmp)
        if self.pinning:
            self.node.runtime_args = list(MODERN_RUNTIME) + ["--apply-affinity"]
            if self.cgroup_parent:
                self.node.runtime_args += ["--cgroup-parent", self.cgroup_parent]
        self.node.start()
        n = self.node
        print("kube-apiserver simulator  %s (the Node, ResourceClaims, ResourceSlices)" % n.api_url)
        print("container runtime sim     NRI socket %s (containerd 2.2.0, NRI v0.12.1)" % n.nri_socket)
        print("dracpu-dra-agent          %s/metrics; kubelet plugin under %s" % (n.dra_http, n.kubelet_dir))
        print("dracpu-nri-agent          %s/metrics; the runtime's ready NRI plugin" % n.nri_http)
        print("kubelet simulator         registered the dra-agent (plugin registration + DRA gRPC)")
        print("shared memory segment     %s (written by the dra-agent, read by the nri-agent)" % n.shm_path)

        say("3. ResourceSlices the scheduler sees")
        slices = n.wait_for(self.slices, "ResourceSlices", timeout=10)
        numa_cpus = {nd["id"]: cpulist(nd["cpus"]) for nd in info["numaNodes"]}
        cap = {}
        print("  %-14s %-5s %-7s %-6s %-12s %-14s %s" % ("device", "NUMA", "socket", "SMT", "dra.cpu/cpu",
                                                        "requestPolicy", "CPUs of the group"))
        for sl in slices:
            for d in sl["spec"]["devices"]:
                attrs = {k.split("/")[-1]: list(v.values())[0] for k, v in d.get("attributes", {}).items()}
                c = d.get("capacity", {}).get("dra.cpu/cpu", {})
                cap[d["name"]] = int(c.get("value", "0"))
                pol = c.get("requestPolicy", {}).get("validRange", {})
                numa = attrs.get("numaNode", "-")
                print("  %-14s %-5s %-7s %-6s %-12s %-14s %s" % (
                    d["name"], numa, attrs.get("socketID", "-"), str(attrs.get("smtEnabled", "-")).lower(),
                    c.get("value", "-"), "min %s step %s" % (pol.get("min", "-"), pol.get("step", "-")),
                    fmt(numa_cpus.get(numa, set()))))
        note("  (%d slice(s), pool %s; minSharedCPUs=%d: that many CPUs are kept out of the first\n"
             "   device's capacity so the shared pool can never be claimed empty)"
             % (len(slices), slices[0]["spec"]["pool"]["name"], MIN_SHARED))

        say("4. The shared pool before any claim, and a container without claims")
        before = n.shared_pool()
        print("shared pool: %s (%s)" % (fmt(before), ncpus(len(before))))
        r = n.create("web", "pod-web", pid=self.sleeper("web"))
        print("pod-web/web created (no claim) -> cpuset %s" % r.get("cpus"))
        self.show_containers()

        say("5. Two pods with claims, prepared through the kubelet, created through the runtime")
        devs = sorted(cap)
        dev_a = "cpudevnuma000" if "cpudevnuma000" in cap else devs[0]
        size_a = min(4, cap[dev_a])
        if size_a < 4:
            note("  (this node publishes only %d claimable CPU(s) on %s, so claim A asks for %d, not 4)"
                 % (cap[dev_a], dev_a, size_a))
        # NUMA node 0 when it has CPUs (a recorded machine may have it offline).
        claim_a, pod_a = "numa%s-claim" % numa_of(dev_a), "pod-numa%s" % numa_of(dev_a)
        n.add_claim(UID_A, dev_a, size_a, name=claim_a, namespace="demo")
        out = n.prepare(UID_A)[UID_A]
        if out["error"]:
            raise RuntimeError("claim A: " + out["error"])
        env_a = self.cdi_env(UID_A)
        cpus_a = n.claim_cpus(UID_A)
        print("claim A  demo/%s: %s of %s (NUMA node %s) -> CPUs %s" % (claim_a, ncpus(size_a), dev_a,
                                                                       numa_of(dev_a), fmt(cpus_a)))
        note("  CDI spec env for its container: " + env_a)
        r = n.create("app-a", pod_a, env=[env_a], pid=self.sleeper("app-a"))
        print(pod_a + "/app-a created -> cpuset %s (%s)" % (r.get("cpus"), "pinned to claim A" if r.get("ok")
                                                              and cpulist(r["cpus"]) == cpus_a else r))
        self.shared_wait("web", before - cpus_a, "the shared container to leave claim A's CPUs")

        # Claim B: whole cores. Prefer another NUMA node; size it to what is left.
        left = {d: cap[d] - (size_a if d == dev_a else 0) for d in devs}
        dev_b = next((d for d in reversed(devs) if left[d] >= tpc), None)
        size_b = 0
        if dev_b:
            size_b = tpc * 2 if left[dev_b] >= tpc * 2 else tpc
        deferred_b = dev_b is None
        if deferred_b:
            dev_b, size_b = dev_a, tpc
        config = [{"source": "FromClaim", "requests": [],
                   "opaque": {"driver": "dra.cpu", "parameters": FULL_CORES}}]
        n.add_claim(UID_B, dev_b, size_b, config=config, name="fullcore-claim", namespace="demo")
        if deferred_b:
            print("claim B  demo/fullcore-claim: %s as whole cores (%d thread(s) per core) of %s"
                  % (ncpus(size_b), tpc, dev_b))
            note("  opaque config %s" % json.dumps(FULL_CORES))
            print("  but nothing is left:")
            print("  %d online CPUs - minSharedCPUs %d - claim A %d = 0. A real scheduler keeps pod-fullcore"
                  % (len(online), MIN_SHARED, size_a))
            out = n.prepare(UID_B)[UID_B]
            print("  pending; asked anyway, the dra-agent %s" % (
                "refuses: " + out["error"] if out["error"] else "prepared it (unexpected)"))
            if not out["error"]:
                raise RuntimeError("claim B prepared beyond the node's capacity")
            note("  claim B is prepared below, once claim A is released.")
        else:
            self.prepare_b(dev_b, size_b, tpc)

        after = n.shared_pool()
        print("shared pool now: %s (%s, was %d); the shared container shrank with it:"
              % (fmt(after), ncpus(len(after)), len(before)))
        self.show_containers()

        say("6. dracpu-shm dump: the live state both agents share")
        print(subprocess.run([self.bin("shm-schema/dracpu-shm"), "dump", "--path", n.shm_path],
                             capture_output=True, text=True).stdout.rstrip())
        if not deferred_b:
            say("6b. dracpu-shm map: who holds which CPU, both claims pinned")
            self.show_map()

        say("7. SIGKILL the nri-agent, restart it: state intact")
        cs_before = n.containers()
        n.kill_nri_agent(signal.SIGKILL)
        print("nri-agent killed (SIGKILL); the runtime keeps its containers running")
        t = time.time()
        n.start_nri_agent()
        print("nri-agent restarted and synchronized in %.2f s; containers:" % (time.time() - t))
        cs_after = self.show_containers()
        print("containers %s" % ("unchanged" if cs_after == cs_before else "CHANGED (a bug)"))
        r = n.create("web2", "pod-web2", pid=self.sleeper("web2"))
        print("a new container without claims after the restart -> cpuset %s (the shared pool)"
              % r.get("cpus"))
        n.kill_dra_agent(signal.SIGKILL)
        n.start_dra_agent()
        again = n.prepare(UID_A)[UID_A]
        print("the dra-agent too: SIGKILL, restart, the kubelet retries Prepare of claim A -> CPUs %s (%s)"
              % (fmt(n.claim_cpus(UID_A)), "unchanged" if not again["error"] and n.claim_cpus(UID_A) == cpus_a
                 else "CHANGED: " + again["error"]))
        ok, text = n.shm_verify()
        print("dracpu-shm verify: " + (text.splitlines()[-1] if text else ("ok" if ok else "FAILED")))

        say("8. Release claim A: the shared pool grows back")
        n.stop("app-a")
        n.remove("app-a")
        self.end_sleeper("app-a")
        out = n.unprepare(UID_A)[UID_A]
        print("%s deleted: app-a stopped and removed, claim A unprepared%s" %
              (pod_a, "" if not out["error"] else " (error: %s)" % out["error"]))
        grown = n.wait_for(lambda: (lambda p: p if p >= after | cpus_a else None)(n.shared_pool()),
                           "the shared pool to grow back", timeout=15)
        print("shared pool: %s (%s, +%d)" % (fmt(grown), ncpus(len(grown)), len(grown) - len(after)))
        self.shared_wait("web", grown, "the shared container to widen")
        self.shared_wait("web2", grown, "the second shared container to widen")
        print("the running shared containers were widened (unsolicited NRI updates, NRI >= v0.12.1):")
        self.show_containers()
        if deferred_b:
            say("9. Now claim B fits: whole cores")
            self.prepare_b(dev_b, size_b, tpc)
            pool = n.shared_pool()
            print("shared pool: %s (%s)" % (fmt(pool), ncpus(len(pool))))
            self.show_containers()
            print()
            self.show_map()
        n.stop("app-b")
        n.remove("app-b")
        self.end_sleeper("app-b")
        out = n.unprepare(UID_B)[UID_B]
        print("\npod-fullcore deleted too%s" % ("" if not out["error"] else " (error: %s)" % out["error"]))
        final = n.wait_for(lambda: (lambda p: p if p == before else None)(n.shared_pool()),
                           "the shared pool to be whole again", timeout=15)
        self.shared_wait("web", final, "the shared container to widen")
        self.shared_wait("web2", final, "the second shared container to widen")
        print("shared pool: %s (%s), as before any claim; web and web2 run on all of it" %
              (fmt(final), ncpus(len(final))))
        ok, text = n.shm_verify()
        print("dracpu-shm verify: %s" % ("ok" if ok else "FAILED: " + text))
        if not self.machine and len(online) < 8:
            note("For the full story on a bigger machine: make demo MACHINE=intel-skylake-sp-2s-ht-pci")
        self.done = self.stopping = True  # from here a signal no longer interrupts anything
        say("Done in %.1f s; stopping everything and removing %s" % (time.time() - start, n.tmp))
        return 0 if ok and cs_after == cs_before else 1

    def prepare_b(self, dev_b, size_b, tpc):
        n = self.node
        out = n.prepare(UID_B)[UID_B]
        if out["error"]:
            raise RuntimeError("claim B: " + out["error"])
        env_b = self.cdi_env(UID_B)
        cpus_b = n.claim_cpus(UID_B)
        numa = numa_of(dev_b)
        print("claim B  demo/fullcore-claim: %s as whole cores (%d thread(s) per core) of %s (NUMA node %s)"
              " -> CPUs %s" % (ncpus(size_b), tpc, dev_b, numa, fmt(cpus_b)))
        note("  opaque config %s" % json.dumps(FULL_CORES))
        note("  CDI spec env for its container: " + env_b)
        r = n.create("app-b", "pod-fullcore", env=[env_b], pid=self.sleeper("app-b"))
        pinned = r.get("ok") and cpulist(r["cpus"]) == cpus_b
        print("pod-fullcore/app-b created -> cpuset %s (%s)" % (r.get("cpus"), "pinned to claim B" if pinned else r))
        for cid in ("web", "web2"):
            if cid in n.containers():
                n.wait_for(lambda c=cid: not n.containers()[c]["cpus"] & cpus_b,
                           "%s to leave claim B's CPUs" % cid, timeout=15)

    def cleanup(self):
        for cid in list(self.sleepers):
            self.end_sleeper(cid)
        if self.node:
            # The kubelet first, then the dra-agent: with the kubelet still connected the
            # dra-agent's gRPC shutdown waits out its grace period (about 5 s) on SIGTERM.
            if "dra-agent" in self.node.procs:
                self.node.kill_dra_agent(signal.SIGTERM)
            self.node.cleanup()
        if self.cgroup_made:
            # The simulator removed its per-container groups on exit; now the demo's own.
            try:
                os.rmdir(self.cgroup_made)
            except OSError as e:
                print("warning: cannot remove %s: %s" % (self.cgroup_made, e))
        # A signal that lands between a fork and the Popen being recorded leaves a child nobody
        # tracks: end every remaining child of this process (ours by construction) by its pid.
        for pid in own_children():
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass


def main():
    args = sys.argv[1:]
    if len(args) != 3 or args[1] not in ("--sysfs-root", "--machine"):
        print(__doc__.split("Usage:")[1].strip(), file=sys.stderr)
        return 2
    build, kind, value = args
    shared = os.environ.get("DRACPU_SHARED_DIR", "")
    demo = Demo(build, value if kind == "--sysfs-root" else None, value if kind == "--machine" else None,
                shared)

    def on_term(signum, _frame):
        if demo.stopping:
            return
        demo.stopping = True
        raise Interrupted(signal.Signals(signum).name)
    signal.signal(signal.SIGTERM, on_term)
    # Also when started with SIGINT ignored (a background job of a script): Ctrl-C must clean up.
    signal.signal(signal.SIGINT, on_term)
    try:
        return demo.run()
    except (KeyboardInterrupt, Interrupted) as e:
        print("\ninterrupted (%s): stopping everything" % (e or "SIGINT"), flush=True)
        return 130
    except (RuntimeError, TimeoutError, OSError, subprocess.CalledProcessError) as e:
        demo.stopping = True
        print("\ndemo failed: %s" % e, file=sys.stderr)
        if demo.node:
            for name in ("dra-agent", "nri-agent", "runtime"):
                print("--- %s log ---\n%s" % (name, demo.node._log_tail(name, 1500)), file=sys.stderr)
        return 1
    finally:
        # A second Ctrl-C or SIGTERM must not cut the clean-up short.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        t = time.time()
        demo.cleanup()
        if demo.done:
            print("stopped and removed in %.1f s; %.1f s in all" % (time.time() - t, time.time() - demo.started))


if __name__ == "__main__":
    sys.exit(main())
