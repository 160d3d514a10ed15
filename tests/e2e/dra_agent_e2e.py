#!/usr/bin/env python3
"""dracpu-dra-agent end to end, with the real binaries and the simulators.

The kube-apiserver simulator holds the Node and the ResourceClaims, the agent runs on a recorded
machine from ../shared/sysfs-corpus with private kubelet, CDI and shared-memory paths, and the
kubelet simulator registers it and prepares / unprepares claims. Checked: registration, grouped
Prepare (CPUs inside the device's NUMA node, whole cores), the CDI spec, shared memory (dracpu-shm
dump and verify), /metrics and /readyz, idempotent Prepare across a SIGKILL and restart,
Unprepare, bad claims refused with their reason, and a clean SIGTERM.

Usage: dra_agent_e2e.py BUILD_DIR   (env DRACPU_SHARED_DIR). Exit 77 = skipped (no ../shared).
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from node_common import Fail, check  # noqa: E402,F401  (re-exported to the dra_agent_* tests)
from whole_node import cpulist  # noqa: E402,F401

MACHINE = "intel-skylake-sp-2s-ht-pci"  # 2 sockets, 2 NUMA nodes, HT: 0-7,16-23 / 8-15,24-31


def wait_for(pred, what, timeout=20.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    raise Fail("timed out waiting for " + what)


def http_get(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def http_post(url, obj):
    req = urllib.request.Request(url, data=json.dumps(obj).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=5) as r:
        return r.status


def claim(uid, device, count, config=None):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"namespace": "default", "name": "claim-" + uid, "uid": uid},
            "spec": {"devices": {"requests": [{"name": "cpus", "exactly": {"deviceClassName": "dra.cpu"}}]}},
            "status": {"allocation": {"devices": {
                "results": [{"request": "cpus", "driver": "dra.cpu", "pool": "node-1", "device": device,
                             "consumedCapacity": {"dra.cpu/cpu": count}}],
                "config": config or []}}}}


class Node:
    # write_sysfs(root), when given, writes the sysfs tree instead of the corpus machine (then
    # `shared` is not used); sysfs_parent puts that tree elsewhere than /tmp (a big synthetic
    # tree is written much faster to a tmpfs such as /dev/shm on a busy disk).
    # api_args: extra dracpu-sim-apiserver flags (--kube-version 1.34, --node NAME=UID, ...).
    def __init__(self, build, shared, write_sysfs=None, sysfs_parent=None, api_args=()):
        self.build = build
        self.tmp = tempfile.mkdtemp(prefix="dracpu-e2e-", dir="/tmp")
        self.root_tmp = tempfile.mkdtemp(prefix="dracpu-e2e-sysfs-", dir=sysfs_parent) if sysfs_parent else None
        self.root = self.root_tmp or os.path.join(self.tmp, "root")
        os.makedirs(self.root, exist_ok=True)
        if write_sysfs is not None:
            write_sysfs(self.root)
        else:
            tree = os.path.join(shared, "sysfs-corpus", MACHINE, "tree.tar.gz")
            subprocess.run(["tar", "-xzf", tree, "-C", self.root], check=True)
        self.kubelet = os.path.join(self.tmp, "k")
        self.cdi = os.path.join(self.tmp, "cdi")
        self.shm = os.path.join(self.tmp, "shm", "state.shm")
        self.procs = []
        self.api = subprocess.Popen(
            [os.path.join(build, "tests/sim/apiserver/dracpu-sim-apiserver"), "--port", "0",
             "--kubeconfig-out", os.path.join(self.tmp, "kubeconfig"), "--node", "node-1=uid-node-1",
             *api_args],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.procs.append(self.api)
        self.url = self.api.stdout.readline().strip()
        check(self.url.startswith("http"), "apiserver simulator serves at " + self.url)
        self.agent = None
        self.http = None

    def start_agent(self, env=None, extra_args=(), node_name="node-1"):
        log = open(os.path.join(self.tmp, "agent.log"), "a")
        self.agent = subprocess.Popen(
            [os.path.join(self.build, "dra-agent/dracpu-dra-agent"),
             "--kubeconfig", os.path.join(self.tmp, "kubeconfig"), "--node-name", node_name,
             "--sysfs-root", self.root, "--kubelet-root-dir", self.kubelet, "--cdi-root", self.cdi,
             "--shm-path", self.shm, "--bind-address", "127.0.0.1:0", *extra_args],
            stdout=log, stderr=log, env=dict(os.environ, **(env or {})))
        self.procs.append(self.agent)

        def port():
            with open(os.path.join(self.tmp, "agent.log")) as f:
                ports = re.findall(r"HTTP on port (\d+)", f.read())
            return ports[-1] if ports and self.agent.poll() is None else None
        p = wait_for(lambda: port() or (self.agent.poll() is not None and "exited"), "the agent to serve")
        if p == "exited":
            raise Fail("agent exited early:\n" + open(os.path.join(self.tmp, "agent.log")).read())
        self.http = "http://127.0.0.1:" + p

    def kubelet_cmd(self, *args):
        r = subprocess.run([os.path.join(self.build, "tests/sim/kubelet/dracpu-sim-kubelet"),
                            "--registry-dir", os.path.join(self.kubelet, "plugins_registry"), *args],
                           capture_output=True, text=True, timeout=60)
        return r.returncode, (json.loads(r.stdout) if r.stdout.strip() else {})

    def shm_dump(self):
        r = subprocess.run([os.path.join(self.build, "shm-schema/dracpu-shm"), "dump", "--json",
                            "--path", self.shm], capture_output=True, text=True, check=True)
        return json.loads(r.stdout)

    def shm_verify(self):
        return subprocess.run([os.path.join(self.build, "shm-schema/dracpu-shm"), "verify",
                               "--path", self.shm], capture_output=True, text=True)

    def cleanup(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)
        if self.root_tmp:
            shutil.rmtree(self.root_tmp, ignore_errors=True)


def spec_cpus(node, uid):
    path = os.path.join(node.cdi, "dra.k8s.io-cpu_claim-%s.json" % uid)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        env = json.load(f)["devices"][0]["containerEdits"]["env"][0]
    return cpulist(env.split("=", 1)[1])


def check_device_metadata(node, uid):
    """Issue 16 item 3: the KEP-5304 files the reference's kubelet plugin library writes."""
    path = os.path.join(node.kubelet, "plugins", "dra.cpu", "dra-device-metadata",
                        "default_claim-%s" % uid, "cpus", "metadata.json")
    with open(path) as f:
        m = json.load(f)
    check(m["apiVersion"] == "metadata.resource.k8s.io/v1beta1" and m["kind"] == "DeviceMetadata",
          "metadata file is a v1beta1 DeviceMetadata")
    check(m["metadata"]["uid"] == uid and m["requests"][0]["name"] == "cpus", "metadata names the claim and request")
    d = m["requests"][0]["devices"][0]
    a = d["attributes"]
    check(d["driver"] == "dra.cpu" and d["name"] == "cpudevnuma000" and d["pool"] == "node-1",
          "metadata names driver, device and pool")
    check(a["dra.cpu/allocatedNumCPUs"]["int"] == 4 and a["dra.cpu/numCPUs"]["int"] >= 4 and
          "bool" in a["dra.cpu/smtEnabled"] and "int" in a["resource.kubernetes.io/numaNode"] and
          "int" in a["dra.cpu/numaNodeID"] and "int" in a["dra.net/numaNode"] and "int" in a["dra.cpu/socketID"],
          "metadata has the grouped attributes the reference's e2e test reads: %s" % sorted(a))
    with open(os.path.join(node.cdi, "dra.cpu_metadata_%s_cpus.json" % uid)) as f:
        spec = json.load(f)
    mount = spec["devices"][0]["containerEdits"]["mounts"][0]
    check(spec["kind"] == "dra.cpu/metadata" and mount["hostPath"] == path and
          mount["containerPath"] == "/var/run/kubernetes.io/dra-device-attributes/resourceclaims/claim-%s/cpus/"
          "dra.cpu-metadata.json" % uid and mount["options"] == ["ro", "bind"],
          "the metadata CDI spec bind-mounts the file read-only at the KEP-5304 path")


def check_kubelet_cpu_manager(node):
    """Issue 16 item 6: a kubelet with the static CPU Manager is reported in /readyz and health."""
    state = os.path.join(node.kubelet, "cpu_manager_state")
    with open(state, "w") as f:
        f.write('{"policyName":"static","defaultCpuSet":"0-31","checksum":1}')
    status, body = http_get(node.http + "/readyz")
    check(status == 503 and "policy static" in body and "cpuManagerPolicy to none" in body,
          "/readyz 503 while the kubelet's static CPU Manager is on: %s" % body.strip())
    rc, health = node.kubelet_cmd("health", "1")
    check(rc == 0 and all(d["health"] == "Unhealthy" and "CPU Manager" in d.get("message", "")
                          for d in health[0]), "devices Unhealthy with the reason: %s" % health)
    conflict = lambda: re.search(r"^dracpu_kubelet_cpu_manager_conflict (\S+)$", http_get(node.http + "/metrics")[1], re.M)
    check(conflict() is not None and float(conflict().group(1)) == 1, "dracpu_kubelet_cpu_manager_conflict 1")
    with open(state, "w") as f:
        f.write('{"policyName":"none","defaultCpuSet":"","checksum":1}')
    wait_for(lambda: http_get(node.http + "/readyz")[0] == 200, "/readyz 200 again with policy none")
    check(float(conflict().group(1)) == 0, "dracpu_kubelet_cpu_manager_conflict 0 with policy none")


def reference_metrics(shared):
    """(name, type, labels) of the table in reference-driver.md, section 2.13."""
    with open(os.path.join(shared, "spec", "reference-driver.md")) as f:
        text = f.read()
    section = text[text.index("### 2.13 Metrics"):]
    section = section[:section.index("\n### ", 4)]
    rows = re.findall(r"^\| `(dra_cpu_\w+)` \| (\w+) \| ([^|]*) \|", section, re.M)
    out = []
    for name, kind, labels in rows:
        out.append((name, kind, re.findall(r"`(\w+)`(?: =)?", labels.split("=")[0]) if "`" in labels else []))
    return out


def check_reference_metrics(build, shared, exposition):
    """Issue 16 item 2: every metric of the reference driver, with its type and label names, in
    our exposition (and in `introspect metrics`), result="unknown" included."""
    rows = reference_metrics(shared)
    check(len(rows) == 8, "reference-driver.md 2.13 lists the reference's 8 metrics: %s" % rows)
    r = subprocess.run([os.path.join(build, "dra-agent/dracpu-dra-agent"), "introspect", "metrics"],
                       capture_output=True, text=True, check=True)
    described = {d["name"]: d for d in json.loads(r.stdout)}
    for name, kind, labels in rows:
        check("# TYPE %s %s\n" % (name, kind) in exposition, "/metrics: %s is a %s" % (name, kind))
        samples = [l for l in exposition.splitlines() if l.startswith(name) and not l.startswith("#")]
        if kind == "histogram":
            check(any(l.startswith(name + "_bucket{le=") for l in samples) and
                  any(l.startswith(name + "_count ") for l in samples), "/metrics: %s has buckets" % name)
        for label in labels:
            check(all(("{%s=" % label) in l for l in samples), "/metrics: %s is labelled %s" % (name, label))
            if label == "result":
                for value in ("success", "error", "unknown"):
                    check(any('%s="%s"' % (label, value) in l for l in samples),
                          '/metrics: %s{result="%s"} present' % (name, value))
        if not labels and kind != "histogram":
            check(any(l.split(" ")[0] == name for l in samples), "/metrics: %s has no labels" % name)
        d = described.get(name)
        check(d is not None and d["type"] == kind and d["labels"] == labels and d["stability"] == "ALPHA",
              "introspect metrics: %s %s %s" % (name, kind, labels))
    for name, d in described.items():
        check("# TYPE %s %s\n" % (name, d["type"]) in exposition, "/metrics serves %s (introspected)" % name)
    print("ok: the reference's %d metrics, types and labels; introspect lists %d" % (len(rows), len(described)))


def main():
    build = sys.argv[1]
    shared = os.environ.get("DRACPU_SHARED_DIR", "")
    if not os.path.isdir(os.path.join(shared, "sysfs-corpus")):
        print("../shared (DRACPU_SHARED_DIR) is absent: e2e test skipped")
        return 77
    node = Node(build, shared)
    try:
        uid1, uid2 = "11111111-aaaa-4bbb-8ccc-000000000001", "11111111-aaaa-4bbb-8ccc-000000000002"
        http_post(node.url + "/_sim/resourceclaims", claim(uid1, "cpudevnuma000", "4"))
        http_post(node.url + "/_sim/resourceclaims", claim(uid2, "cpudevnuma001", "1500m"))
        node.start_agent()

        rc, reg = node.kubelet_cmd("register")
        check(rc == 0 and reg.get("chosen") == "v1.DRAPlugin", "kubelet registers the plugin over v1: %s" % reg)
        wait_for(lambda: http_get(node.http + "/readyz")[0] == 200, "/readyz 200 after registration and publishing")
        check_kubelet_cpu_manager(node)
        status, body = http_get(node.url + "/apis/resource.k8s.io/v1/resourceslices")
        slices = json.loads(body)["items"]
        check(len(slices) == 1 and slices[0]["spec"]["nodeName"] == "node-1", "one ResourceSlice for node-1")
        devices = {d["name"]: d for d in slices[0]["spec"]["devices"]}
        check(sorted(devices) == ["cpudevnuma000", "cpudevnuma001"], "devices cpudevnuma000 and 001")
        check(devices["cpudevnuma000"]["capacity"]["dra.cpu/cpu"]["value"] == "15" and
              devices["cpudevnuma001"]["capacity"]["dra.cpu/cpu"]["value"] == "16",
              "capacities 15 + 16 (one CPU kept for the shared pool)")
        # An operator deletes the slice: it comes back.
        name = slices[0]["metadata"]["name"]
        req = urllib.request.Request(node.url + "/apis/resource.k8s.io/v1/resourceslices/" + name, method="DELETE")
        urllib.request.urlopen(req, timeout=5).read()
        wait_for(lambda: json.loads(http_get(node.url + "/apis/resource.k8s.io/v1/resourceslices")[1])["items"],
                 "the deleted ResourceSlice to come back", timeout=10)
        print("ok: deleted ResourceSlice re-created")

        rc, health = node.kubelet_cmd("health", "1")
        check(rc == 0 and sorted(d["device"] for d in health[0]) == ["cpudevnuma000", "cpudevnuma001"],
              "health stream lists both NUMA devices: %s" % health)
        check(all(d["health"] == "Healthy" and d["timeoutSeconds"] == 30 for d in health[0]),
              "devices Healthy (nri-agent within its start-up grace), timeout 30 s")

        rc, out = node.kubelet_cmd("prepare", "default/claim-%s/%s" % (uid1, uid1))
        check(rc == 0 and out[uid1]["error"] == "", "grouped claim prepared: %s" % out)
        dev = out[uid1]["devices"][0]
        check(dev["deviceName"] == "cpudevnuma000" and dev["poolName"] == "node-1", "device and pool reported")
        check(dev["cdiDeviceIds"] == ["dra.k8s.io/cpu=claim-" + uid1, "dra.cpu/metadata=%s_cpus" % uid1],
              "CDI device ids reported: the claim's and its KEP-5304 metadata mount")
        check_device_metadata(node, uid1)
        cpus = spec_cpus(node, uid1)
        check(cpus is not None and len(cpus) == 4, "CDI spec holds 4 CPUs: %s" % cpus)
        check(cpus <= cpulist("0-7,16-23"), "CPUs inside NUMA node 0")
        check(all((c in cpus) == ((c + 16) % 32 in cpus) for c in cpus), "whole cores (both HT siblings)")

        # The claim's status shows its CPUs (KEP-4817), written by the agent after Prepare.
        claim_path = node.url + "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/claim-" + uid1

        def status_devices():
            return json.loads(http_get(claim_path)[1]).get("status", {}).get("devices", [])
        wait_for(status_devices, "status.devices of the prepared claim", timeout=10)
        entry = status_devices()[0]
        check(entry["driver"] == "dra.cpu" and entry["device"] == "cpudevnuma000" and
              cpulist(entry["data"]["cpus"]) == spec_cpus(node, uid1) and entry["data"]["numaNodes"] == [0] and
              entry["conditions"][0]["type"] == "Ready" and entry["conditions"][0]["status"] == "True",
              "ResourceClaim status.devices shows the CPUs: %s" % entry)

        dump = node.shm_dump()
        claims = {c["uid"]: c for c in dump["claims"]}
        check(uid1 in claims and cpulist(claims[uid1]["cpus"]) == cpus, "shared memory holds the claim")
        check(node.shm_verify().returncode == 0, "dracpu-shm verify passes")
        status, metrics = http_get(node.http + "/metrics")
        check('dra_cpu_prepare_claims_total{result="success"} 1' in metrics, "/metrics counts the prepare")
        check("dra_cpu_allocated_cpus 4" in metrics, "/metrics shows 4 allocated CPUs")
        check_reference_metrics(build, shared, metrics)

        rc, out = node.kubelet_cmd("prepare", "default/claim-%s/%s" % (uid2, uid2))
        check(rc == 1 and "fraction of a CPU" in out[uid2]["error"], "fractional request refused: %s" % out)
        rc, out = node.kubelet_cmd("prepare", "default/missing/%s" % "deadbeef")
        check(rc == 1 and "not found" in out["deadbeef"]["error"], "unknown claim refused")

        # SIGKILL and restart (this time under a systemd-style NOTIFY_SOCKET with a watchdog): the
        # claim keeps its CPUs, and the agent reports READY=1 and feeds the watchdog.
        node.agent.kill()
        node.agent.wait()
        notify_path = os.path.join(node.tmp, "notify.sock")
        notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        notify.bind(notify_path)
        notify.settimeout(10)
        node.start_agent({"NOTIFY_SOCKET": notify_path, "WATCHDOG_USEC": "3000000"})
        messages = set()
        deadline = time.time() + 10
        while time.time() < deadline and not {"READY=1", "WATCHDOG=1"} <= messages:
            messages |= set(notify.recv(4096).decode().split("\n"))
        notify.close()
        check({"READY=1", "WATCHDOG=1"} <= messages, "sd_notify READY=1 and WATCHDOG=1: %s" % sorted(messages))
        rc, reg = node.kubelet_cmd("register")
        check(rc == 0, "kubelet registers the restarted agent")
        rc, out = node.kubelet_cmd("prepare", "default/claim-%s/%s" % (uid1, uid1))
        check(rc == 0 and spec_cpus(node, uid1) == cpus, "same CPUs after SIGKILL and restart")
        check(node.shm_verify().returncode == 0, "dracpu-shm verify passes after the restart")

        rc, out = node.kubelet_cmd("unprepare", "default/claim-%s/%s" % (uid1, uid1))
        check(rc == 0 and out[uid1] == "", "claim unprepared")
        check(spec_cpus(node, uid1) is None, "CDI spec removed")
        check(not node.shm_dump()["claims"], "shared memory released the claim")
        wait_for(lambda: not status_devices(), "status.devices cleared after Unprepare", timeout=10)
        print("ok: status.devices cleared after Unprepare")
        rc, out = node.kubelet_cmd("unprepare", "default/claim-%s/%s" % (uid1, uid1))
        check(rc == 0, "unprepare is idempotent")

        node.agent.send_signal(signal.SIGTERM)
        check(node.agent.wait(timeout=20) == 0, "SIGTERM stops the agent with exit 0")
        check(not os.path.exists(os.path.join(node.kubelet, "plugins_registry", "dra.cpu-reg.sock")),
              "registration socket removed")
        print("dra-agent e2e: all checks passed")
        return 0
    except Fail as e:
        print("FAIL:", e)
        log = os.path.join(node.tmp, "agent.log")
        if os.path.exists(log):
            print("--- agent log ---\n" + open(log).read()[-6000:])
        return 1
    finally:
        node.cleanup()


if __name__ == "__main__":
    sys.exit(main())
