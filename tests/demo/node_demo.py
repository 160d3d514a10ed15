#!/usr/bin/env python3
"""make demo: one node, run locally against simulators, telling what dracpu does.

Everything runs on private sockets and paths under one temp dir (never the host's kubelet,
runtime or /run/dracpu), and everything is stopped and removed at the end, also on Ctrl-C.

Usage: node_demo.py BUILD_DIR SYSFS_ROOT LABEL
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

BOLD, DIM, END = ("\033[1m", "\033[2m", "\033[0m") if sys.stdout.isatty() else ("", "", "")


def say(title):
    print("\n" + BOLD + "== " + title + END)


def note(text):
    print(DIM + text + END)


def cpulist(text):
    out = set()
    for part in filter(None, text.split(",")):
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out


def fmt(cpus):
    cpus = sorted(cpus)
    out, i = [], 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(str(cpus[i]) if i == j else "%d-%d" % (cpus[i], cpus[j]))
        i = j + 1
    return ",".join(out)


class Demo:
    def __init__(self, build, root, label):
        self.build, self.root, self.label = build, root, label
        self.tmp = tempfile.mkdtemp(prefix="dracpu-demo-", dir="/tmp")
        self.procs = {}
        self.kubelet = os.path.join(self.tmp, "kubelet")
        self.cdi = os.path.join(self.tmp, "cdi")
        self.shm = os.path.join(self.tmp, "run", "state.shm")

    def bin(self, rel):
        return os.path.join(self.build, rel)

    def spawn(self, name, args, log=True):
        out = open(os.path.join(self.tmp, name + ".log"), "a") if log else subprocess.DEVNULL
        self.procs[name] = subprocess.Popen(args, stdout=out, stderr=out)
        return self.procs[name]

    def stop_all(self):
        for p in self.procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def wait_log(self, name, pattern, timeout=20):
        deadline = time.time() + timeout
        path = os.path.join(self.tmp, name + ".log")
        while time.time() < deadline:
            if os.path.exists(path):
                m = re.findall(pattern, open(path).read())
                if m:
                    return m[-1]
            if self.procs[name].poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError(name + " did not start; its log:\n" + open(path).read()[-3000:])

    def kubelet_cmd(self, *args):
        r = subprocess.run([self.bin("tests/sim/kubelet/dracpu-sim-kubelet"), "--registry-dir",
                            os.path.join(self.kubelet, "plugins_registry"), *args],
                           capture_output=True, text=True, timeout=60)
        return r.returncode, json.loads(r.stdout) if r.stdout.strip() else {}

    def shm_dump(self, as_json=False):
        args = [self.bin("shm-schema/dracpu-shm"), "dump", "--path", self.shm] + (["--json"] if as_json else [])
        out = subprocess.run(args, capture_output=True, text=True).stdout
        return json.loads(out) if as_json else out

    def start_agent(self):
        self.spawn("dra-agent", [self.bin("dra-agent/dracpu-dra-agent"),
                                 "--kubeconfig", os.path.join(self.tmp, "kubeconfig"), "--node-name", "demo-node",
                                 "--sysfs-root", self.root, "--kubelet-root-dir", self.kubelet,
                                 "--cdi-root", self.cdi, "--shm-path", self.shm, "--bind-address", "127.0.0.1:0"])
        return self.wait_log("dra-agent", r"HTTP on port (\d+)")

    def post(self, path, obj):
        req = urllib.request.Request(self.api + path, data=json.dumps(obj).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        urllib.request.urlopen(req, timeout=5).read()

    def claim(self, name, uid, device, count, policy=None):
        config = []
        if policy:
            config = [{"source": "FromClaim", "requests": [],
                       "opaque": {"driver": "dra.cpu", "parameters": {"apiVersion": "v1alpha1", "policy": policy}}}]
        self.post("/_sim/resourceclaims", {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"namespace": "demo", "name": name, "uid": uid},
            "status": {"allocation": {"devices": {
                "results": [{"request": "cpus", "driver": "dra.cpu", "pool": "demo-node", "device": device,
                             "consumedCapacity": {"dra.cpu/cpu": str(count)}}], "config": config}}}})
        return "demo/%s/%s" % (name, uid)

    def spec_cpus(self, uid):
        path = os.path.join(self.cdi, "dra.k8s.io-cpu_claim-%s.json" % uid)
        env = json.load(open(path))["devices"][0]["containerEdits"]["env"][0]
        return env, cpulist(env.split("=", 1)[1])

    def shared_pool(self):
        d = self.shm_dump(as_json=True)
        held = set()
        for c in d["claims"]:
            held |= cpulist(c["cpus"])
        return cpulist(d["cpus"]["allocatable"]) - held

    def run(self):
        start = time.time()
        say("1. The node: " + self.label)
        subprocess.run([self.bin("dra-agent/dracpu-dra-agent"), "gatherinfo", "--sysfs-root", self.root,
                        "--format", "summary"], check=True)
        info = json.loads(subprocess.run([self.bin("dra-agent/dracpu-dra-agent"), "gatherinfo",
                                          "--sysfs-root", self.root, "--format", "json"],
                                         capture_output=True, text=True, check=True).stdout)["topology"]
        tpc = info["threadsPerCore"]

        say("2. Simulators and the dra-agent")
        api = subprocess.Popen([self.bin("tests/sim/apiserver/dracpu-sim-apiserver"), "--port", "0",
                                "--kubeconfig-out", os.path.join(self.tmp, "kubeconfig"),
                                "--node", "demo-node=uid-demo-node"], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
        self.procs["apiserver"] = api
        self.api = api.stdout.readline().strip()
        print("kube-apiserver simulator  " + self.api)
        port = self.start_agent()
        print("dracpu-dra-agent          metrics on http://127.0.0.1:%s/metrics, state in %s" % (port, self.shm))
        rc, reg = self.kubelet_cmd("register")
        print("kubelet simulator         registered %s, endpoint %s, speaking %s" %
              (reg.get("name"), reg.get("endpoint"), reg.get("chosen")))

        say("3. ResourceSlices the scheduler sees")
        deadline = time.time() + 10
        slices = []
        while time.time() < deadline and not slices:
            with urllib.request.urlopen(self.api + "/apis/resource.k8s.io/v1/resourceslices", timeout=5) as r:
                slices = json.loads(r.read())["items"]
            time.sleep(0.05)
        for sl in slices:
            spec = sl["spec"]
            print("%s  pool %s generation %d, %d device(s)" % (sl["metadata"]["name"], spec["pool"]["name"],
                                                             spec["pool"]["generation"], len(spec["devices"])))
            for d in spec["devices"]:
                cap = d.get("capacity", {}).get("dra.cpu/cpu", {})
                attrs = ", ".join("%s=%s" % (k.split("/")[-1], list(v.values())[0]) for k, v in sorted(d["attributes"].items())
                                  if k in ("resource.kubernetes.io/numaNode", "dra.cpu/socketID", "dra.cpu/smtEnabled"))
                print("  %-14s dra.cpu/cpu=%s (requestPolicy %s)  %s" % (d["name"], cap.get("value", "-"),
                                                                     json.dumps(cap.get("requestPolicy", {})), attrs))
        note("  (one CPU of the first device is kept out for the shared pool: minSharedCPUs=1)")

        nodes = [n for n in info["numaNodes"] if n["cpus"]]
        first, last = nodes[0], nodes[-1]
        n_first = len(cpulist(first["cpus"]))
        small = max(1, min(4, n_first - 2))
        say("4. Shared pool before any claim")
        before = self.shared_pool()
        print("shared pool: %s (%d CPUs)" % (fmt(before), len(before)))

        say("5. Two claims prepared through the kubelet")
        uid_a = "aaaaaaaa-0000-4000-8000-00000000000a"
        uid_b = "bbbbbbbb-0000-4000-8000-00000000000b"
        ref_a = self.claim("numa0-claim", uid_a, "cpudevnuma%03d" % first["id"], small)
        rc, out = self.kubelet_cmd("prepare", ref_a)
        env, cpus_a = self.spec_cpus(uid_a)
        print("claim numa0-claim: %d CPUs on NUMA node %d -> CPUs %s" % (small, first["id"], fmt(cpus_a)))
        note("  CDI env injected into its container: " + env)
        full = tpc * 2
        ref_b = self.claim("fullcore-claim", uid_b, "cpudevnuma%03d" % last["id"], full, {"fullPCPUsOnly": True})
        rc, out = self.kubelet_cmd("prepare", ref_b)
        if out.get(uid_b, {}).get("error"):
            print("claim fullcore-claim refused: " + out[uid_b]["error"])
        else:
            env, cpus_b = self.spec_cpus(uid_b)
            print("claim fullcore-claim: %d CPUs as whole cores (policy fullPCPUsOnly) on NUMA node %d -> CPUs %s"
                  % (full, last["id"], fmt(cpus_b)))
        after = self.shared_pool()
        print("shared pool now: %s (%d CPUs)" % (fmt(after), len(after)))

        say("6. dracpu-shm dump: the live state both agents share")
        print(self.shm_dump())

        say("7. SIGKILL the dra-agent, restart it: nothing lost")
        self.procs["dra-agent"].kill()
        self.procs["dra-agent"].wait()
        print("dra-agent killed (SIGKILL)")
        self.start_agent()
        self.kubelet_cmd("register")
        rc, out = self.kubelet_cmd("prepare", ref_a)
        _, again = self.spec_cpus(uid_a)
        print("restarted; kubelet retries Prepare of numa0-claim -> CPUs %s (%s)" %
              (fmt(again), "unchanged" if again == cpus_a else "CHANGED"))
        verify = subprocess.run([self.bin("shm-schema/dracpu-shm"), "verify", "--path", self.shm],
                                capture_output=True, text=True)
        print("dracpu-shm verify: " + (verify.stdout.strip() or verify.stderr.strip()))

        say("8. Release a claim: the shared pool grows back")
        rc, out = self.kubelet_cmd("unprepare", ref_a)
        grown = self.shared_pool()
        print("numa0-claim unprepared; shared pool: %s (%d CPUs, +%d)" % (fmt(grown), len(grown), len(grown) - len(after)))
        self.kubelet_cmd("unprepare", ref_b)

        say("Done in %.1f s; stopping everything and removing %s" % (time.time() - start, self.tmp))
        return 0


def main():
    build, root, label = sys.argv[1], sys.argv[2], sys.argv[3]
    demo = Demo(build, root, label)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(130))
    try:
        return demo.run()
    except KeyboardInterrupt:
        print("\ninterrupted")
        return 130
    finally:
        demo.stop_all()


if __name__ == "__main__":
    sys.exit(main())
