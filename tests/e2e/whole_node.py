"""A whole dracpu node for e2e tests, the soak test and the demo: both real agents together.

    node = WholeNode(build_dir, machine="intel-skylake-sp-2s-ht-pci")
    node.start()
    node.add_claim(uid, "cpudevnuma000", 4); node.prepare(uid)
    node.create("c1", "sb1", claim_uids=[uid])          # the runtime's reply: {"ok", "cpus", ...}
    node.cleanup()                                        # also runs at exit

Processes (one temp dir under /tmp holds every socket, path and log; never a host path):
  apiserver   tests/sim/apiserver/dracpu-sim-apiserver   the Node and the ResourceClaims
  runtime     tests/sim/runtime/dracpu-runtime-sim --control   the NRI socket (control_session.h)
  dra-agent   dra-agent/dracpu-dra-agent                 Prepare/Unprepare, writes shared memory
  nri-agent   nri-agent/dracpu-nri-agent                 the NRI plugin, reads shared memory
  kubelet     tests/sim/kubelet/dracpu-sim-kubelet session   registers the dra-agent, prepares
Logs are <tmp>/<name>.log (self.logs[name]); the runtime's stdout is its command channel, so
only its stderr goes to runtime.log.

API (a contract for later tests; keep it):
  WholeNode(build_dir, sysfs_root=None, machine=None, shared_dir=None, tmp_prefix="dracpu-node-",
            node_name="node-1", log=print, runtime_args=MODERN_RUNTIME, dra_agent_args=(),
            tmp_parent="/tmp")
      sysfs_root: a directory holding sys/devices/system/cpu, used as is; machine: a
      <shared_dir>/sysfs-corpus name (shared_dir defaults to $DRACPU_SHARED_DIR), extracted.
      runtime_args: extra dracpu-runtime-sim flags (--runtime-name/-version, --nri-version,
      --apply-affinity); the default is a runtime whose NRI allows unsolicited updates.
      dra_agent_args: extra dracpu-dra-agent flags (e.g. --config FILE, write_file() makes one).
      apiserver_args: extra dracpu-sim-apiserver flags (e.g. --bookmark-interval-ms 60000).
      tmp_parent: where the node's directory (sockets, CDI, shared-memory segment, logs) is made;
      a node keeps these under /run, a tmpfs, so benchmarks pass /dev/shm.
  start()                      everything; returns once the dra-agent is registered and ready and
                               the nri-agent is the runtime's ready plugin
  start_dra_agent(), kill_dra_agent(sig=SIGKILL)   kill waits for the exit
  start_nri_agent(), kill_nri_agent(sig=SIGKILL)   start waits for the plugin to be ready
  restart_runtime()            the runtime's "restart" op, then waits for the plugin
  add_claim(uid, device, count, config=None, name=None, namespace="default")
  prepare(*uids) -> {uid: {"devices": [...], "error": str}}    (error "" on success)
  unprepare(*uids) -> {uid: {"error": str}}
  claim_cpus(uid) -> set or None; shared_pool() -> set; shm_dump() -> dict;
  shm_verify() -> (ok, output)
  create(cid, pod_id, env=(), claim_uids=(), pod_uid=None, name=None, pid=0) -> reply dict
  update(cid, cpus), stop(cid), remove(cid) -> reply dict; containers() -> {id: {...}}
  wait_for(pred, what, timeout=20.0) -> pred's truthy value, or raises TimeoutError
  metrics(agent="dra"|"nri") -> str
  cleanup()                    idempotent; registered with atexit
Added for the node_*_e2e suite (additive):
  start_without_nri_agent()    apiserver, runtime and dra-agent only (start_nri_agent() later)
  write_file(name, text) -> path under the temp dir
  add_individual_claim(uid, devices, config=None, name=None, namespace="default")
  restart_kubelet()            a new kubelet session: re-registers the dra-agent
  kubelet_cli(*args, timeout=60) -> (rc, parsed JSON)   a one-shot dracpu-sim-kubelet process
  health(n=1) -> [[{pool, device, health, message, timeoutSeconds}, ...], ...]   (kubelet_cli)
  slices() -> [ResourceSlice]; devices() -> {name: device}; delete_slices() -> count deleted
  set_cpu_online(cpu, online)  hotplug in the extracted (writable) machine tree: cpuN/online and
                               the online/offline list files, as the kernel shows it
Helpers: cpulist("0-3,8") -> {0,1,2,3,8}; fmt({0,1,2,3,8}) -> "0-3,8".
"""
import atexit
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

DRIVER = "dra.cpu"
# What the runtime simulator reports in Configure. NRI >= v0.12.1 makes the nri-agent's
# sharedPoolUpdates=auto widen running shared containers with unsolicited UpdateContainers;
# pass runtime_args=() for the simulator's default (containerd 2.1.0, no NRI version sent: the
# agent then leaves running shared containers alone until their next update).
MODERN_RUNTIME = ("--runtime-version", "2.2.0", "--nri-version", "v0.12.1")


def cpulist(text):
    """'0-3,8' -> {0, 1, 2, 3, 8}; '' -> set()."""
    out = set()
    for part in filter(None, (text or "").strip().split(",")):
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out


def fmt(cpus):
    """{0, 1, 2, 3, 8} -> '0-3,8'."""
    cpus, out, i = sorted(cpus), [], 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(str(cpus[i]) if i == j else "%d-%d" % (cpus[i], cpus[j]))
        i = j + 1
    return ",".join(out)


class WholeNode:
    def __init__(self, build_dir, sysfs_root=None, machine=None, shared_dir=None,
                 tmp_prefix="dracpu-node-", node_name="node-1", log=print,
                 runtime_args=MODERN_RUNTIME, dra_agent_args=(), apiserver_args=(),
                 tmp_parent="/tmp"):
        self.build = os.path.abspath(build_dir)
        self.node_name = node_name
        self.log = log
        self.tmp = tempfile.mkdtemp(prefix=tmp_prefix, dir=tmp_parent)
        self.procs = {}
        self.logs = {}
        self._cleaned = False
        atexit.register(self.cleanup)
        if sysfs_root:
            self.sysfs_root = os.path.abspath(sysfs_root)
        elif machine:
            shared = shared_dir or os.environ.get("DRACPU_SHARED_DIR", "")
            tree = os.path.join(shared, "sysfs-corpus", machine, "tree.tar.gz")
            self.sysfs_root = os.path.join(self.tmp, "root")
            os.makedirs(self.sysfs_root)
            subprocess.run(["tar", "-xzf", tree, "-C", self.sysfs_root], check=True)
        else:
            raise ValueError("WholeNode needs sysfs_root or machine")
        self.kubeconfig = os.path.join(self.tmp, "kubeconfig")
        self.kubelet_dir = os.path.join(self.tmp, "kubelet")
        self.cdi_dir = os.path.join(self.tmp, "cdi")
        self.shm_path = os.path.join(self.tmp, "run", "state.shm")
        self.nri_socket = os.path.join(self.tmp, "nri.sock")
        self.api_url = self.dra_http = self.nri_http = None
        self.runtime_args = list(runtime_args)
        self.dra_agent_args = list(dra_agent_args)
        self.apiserver_args = list(apiserver_args)
        self._claims = {}  # uid -> "ns/name/uid"

    # --- processes ---------------------------------------------------------------------------

    def _bin(self, rel):
        return os.path.join(self.build, rel)

    def _spawn(self, name, args, stdin=None, stdout=None):
        self.logs[name] = os.path.join(self.tmp, name + ".log")
        out = open(self.logs[name], "a")
        p = subprocess.Popen(args, stdin=stdin, stdout=stdout or out, stderr=out,
                             text=True, bufsize=1 if stdout else -1)
        out.close()
        self.procs[name] = p
        return p

    def _log_tail(self, name, n=4000):
        try:
            with open(self.logs[name]) as f:
                return f.read()[-n:]
        except (KeyError, OSError):
            return ""

    def _port_from_log(self, name, pattern, offset):
        """The port `name` logged after `offset` (its log is appended to across restarts)."""
        def port():
            with open(self.logs[name]) as f:
                f.seek(offset)
                found = re.findall(pattern, f.read())
            if found:
                return found[-1]
            return "exited" if self.procs[name].poll() is not None else None
        p = self.wait_for(port, name + " to serve HTTP")
        if p == "exited":
            raise RuntimeError(name + " exited early:\n" + self._log_tail(name))
        return "http://127.0.0.1:" + p

    def _log_size(self, name):
        path = os.path.join(self.tmp, name + ".log")
        return os.path.getsize(path) if os.path.exists(path) else 0

    def _stop(self, name, sig=signal.SIGKILL, timeout=20):
        p = self.procs.get(name)
        if p is None:
            return None
        if p.poll() is None:
            p.send_signal(sig)
            try:
                p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        return p.returncode

    def start(self):
        self._start_apiserver()
        self._start_runtime()
        self.start_dra_agent()
        self.start_nri_agent()
        self.log("whole node up in %s: dra-agent %s, nri-agent %s" %
                 (self.tmp, self.dra_http, self.nri_http))

    def _start_apiserver(self):
        p = self._spawn("apiserver", [self._bin("tests/sim/apiserver/dracpu-sim-apiserver"),
                                      "--port", "0", "--kubeconfig-out", self.kubeconfig,
                                      "--node", "%s=uid-%s" % (self.node_name, self.node_name),
                                      *self.apiserver_args],
                        stdout=subprocess.PIPE)
        self.api_url = p.stdout.readline().strip()
        if not self.api_url.startswith("http"):
            raise RuntimeError("apiserver simulator did not start:\n" + self._log_tail("apiserver"))

    def _start_runtime(self):
        p = self._spawn("runtime", [self._bin("tests/sim/runtime/dracpu-runtime-sim"),
                                    "--socket", self.nri_socket, "--control", *self.runtime_args],
                        stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        line = p.stdout.readline()
        if not line or not json.loads(line).get("ready"):
            raise RuntimeError("runtime simulator did not start:\n" + self._log_tail("runtime"))

    def _request(self, name, line):
        """One line to a line-protocol simulator (runtime, kubelet) and its JSON reply."""
        p = self.procs[name]
        p.stdin.write(line + "\n")
        p.stdin.flush()
        reply = p.stdout.readline()
        if not reply:
            raise RuntimeError("%s simulator gone:\n%s" % (name, self._log_tail(name)))
        return json.loads(reply)

    def _runtime(self, cmd):
        """Sends one control command to the runtime simulator and returns its reply."""
        return self._request("runtime", json.dumps(cmd))

    def start_dra_agent(self):
        offset = self._log_size("dra-agent")
        self._spawn("dra-agent", [self._bin("dra-agent/dracpu-dra-agent"),
                                  "--kubeconfig", self.kubeconfig, "--node-name", self.node_name,
                                  "--sysfs-root", self.sysfs_root,
                                  "--kubelet-root-dir", self.kubelet_dir, "--cdi-root", self.cdi_dir,
                                  "--shm-path", self.shm_path, "--bind-address", "127.0.0.1:0",
                                  *self.dra_agent_args])
        self.dra_http = self._port_from_log("dra-agent", r"HTTP on port (\d+)", offset)
        self._start_kubelet()  # registers the (new) agent as the kubelet would
        self.wait_for(lambda: self._http_status(self.dra_http + "/readyz") == 200,
                      "dra-agent /readyz 200")

    def kill_dra_agent(self, sig=signal.SIGKILL):
        self._stop("kubelet", signal.SIGTERM)
        return self._stop("dra-agent", sig)

    def start_nri_agent(self):
        offset = self._log_size("nri-agent")
        self._spawn("nri-agent", [self._bin("nri-agent/dracpu-nri-agent"),
                                  "--nri-socket", self.nri_socket, "--shm-path", self.shm_path,
                                  "--sysfs-root", self.sysfs_root, "--bind-address", "127.0.0.1:0"])
        self.nri_http = self._port_from_log("nri-agent", r", http (\d+)", offset)
        self._wait_plugin()

    def kill_nri_agent(self, sig=signal.SIGKILL):
        return self._stop("nri-agent", sig)

    def _wait_plugin(self, timeout_ms=20000):
        r = self._runtime({"op": "wait_plugin", "timeout_ms": timeout_ms})
        if not r["ok"]:
            raise RuntimeError("nri-agent not ready in the runtime: %s\n%s" %
                               (r["error"], self._log_tail("nri-agent")))

    def restart_runtime(self):
        r = self._runtime({"op": "restart"})
        if not r["ok"]:
            raise RuntimeError("runtime restart: " + r["error"])
        self._wait_plugin()

    def _start_kubelet(self):
        self._stop("kubelet", signal.SIGTERM)
        self._spawn("kubelet", [self._bin("tests/sim/kubelet/dracpu-sim-kubelet"), "--registry-dir",
                                os.path.join(self.kubelet_dir, "plugins_registry"), "session"],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        r = self._kubelet("probe")
        if r.get("probe") != "ok":
            raise RuntimeError("kubelet simulator could not register the dra-agent: %s" % r)

    def _kubelet(self, *words):
        return self._request("kubelet", " ".join(words))

    def cleanup(self):
        if self._cleaned:
            return
        self._cleaned = True
        for p in self.procs.values():
            if p.poll() is None:
                p.terminate()
        deadline = time.time() + 5
        for p in self.procs.values():
            try:
                p.wait(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            for f in (p.stdin, p.stdout):
                if f:
                    try:
                        f.close()
                    except OSError:
                        pass
        shutil.rmtree(self.tmp, ignore_errors=True)

    # --- claims ------------------------------------------------------------------------------

    def add_claim(self, uid, device, count, config=None, name=None, namespace="default"):
        name = name or "claim-" + uid
        body = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                "metadata": {"namespace": namespace, "name": name, "uid": uid},
                "spec": {"devices": {"requests": [{"name": "cpus",
                                                   "exactly": {"deviceClassName": DRIVER}}]}},
                "status": {"allocation": {"devices": {
                    "results": [{"request": "cpus", "driver": DRIVER, "pool": self.node_name,
                                 "device": device, "consumedCapacity": {"dra.cpu/cpu": str(count)}}],
                    "config": config or []}}}}
        req = urllib.request.Request(self.api_url + "/_sim/resourceclaims", method="POST",
                                     data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        urllib.request.urlopen(req, timeout=5).read()
        self._claims[uid] = "%s/%s/%s" % (namespace, name, uid)

    def _refs(self, uids):
        return [self._claims.get(u, "default/claim-%s/%s" % (u, u)) for u in uids]

    def prepare(self, *uids):
        r = self._kubelet("prepare", *self._refs(uids))
        if "error" in r and not any(u in r for u in uids):
            return {u: {"devices": [], "error": r["error"]} for u in uids}
        return r

    def unprepare(self, *uids):
        r = self._kubelet("unprepare", *self._refs(uids))
        if "error" in r and not any(u in r for u in uids):
            return {u: {"error": r["error"]} for u in uids}
        return {u: {"error": e} for u, e in r.items()}

    # --- shared memory -----------------------------------------------------------------------

    def shm_dump(self):
        r = subprocess.run([self._bin("shm-schema/dracpu-shm"), "dump", "--json", "--path",
                            self.shm_path], capture_output=True, text=True, check=True)
        return json.loads(r.stdout)

    def shm_verify(self):
        r = subprocess.run([self._bin("shm-schema/dracpu-shm"), "verify", "--path", self.shm_path],
                           capture_output=True, text=True)
        return r.returncode == 0, (r.stdout + r.stderr).strip()

    def claim_cpus(self, uid):
        for c in self.shm_dump()["claims"]:
            if c["uid"] == uid:
                return cpulist(c["cpus"])
        return None

    def shared_pool(self):
        """The shared pool the nri-agent published, or (before it did) allocatable minus claims."""
        d = self.shm_dump()
        if d["cpus"]["sharedPoolPublished"]:
            return cpulist(d["cpus"]["sharedPool"])
        held = set()
        for c in d["claims"]:
            held |= cpulist(c["cpus"])
        return cpulist(d["cpus"]["allocatable"]) - held

    # --- containers (the runtime simulator) --------------------------------------------------

    def create(self, cid, pod_id, env=(), claim_uids=(), pod_uid=None, name=None, pid=0):
        env = list(env)
        for uid in claim_uids:
            cpus = self.claim_cpus(uid)
            if cpus is None:
                raise RuntimeError("claim %s is not in shared memory" % uid)
            env.append("DRA_CPUSET_%s=%s" % (uid, fmt(cpus)))
        return self._runtime({"op": "create",
                              "pod": {"id": pod_id, "name": pod_id, "uid": pod_uid or "uid-" + pod_id,
                                      "namespace": "default"},
                              "container": {"id": cid, "name": name or cid, "env": env, "pid": pid}})

    def update(self, cid, cpus):
        return self._runtime({"op": "update", "id": cid,
                              "cpus": cpus if isinstance(cpus, str) else fmt(cpus)})

    def stop(self, cid):
        return self._runtime({"op": "stop", "id": cid})

    def remove(self, cid):
        return self._runtime({"op": "remove", "id": cid})

    def containers(self):
        r = self._runtime({"op": "list"})
        return {c["id"]: {"pod": c["pod"], "name": c["name"], "state": c["state"],
                          "cpus": cpulist(c["cpus"]), "mems": c["mems"], "pid": c["pid"]}
                for c in r["containers"]}

    # --- misc --------------------------------------------------------------------------------

    def wait_for(self, pred, what, timeout=20.0):
        deadline = time.time() + timeout
        while True:
            v = pred()
            if v:
                return v
            if time.time() >= deadline:
                raise TimeoutError("timed out after %.0f s waiting for %s" % (timeout, what))
            time.sleep(0.05)

    @staticmethod
    def _http_status(url):
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return r.status
        except urllib.error.HTTPError as e:
            return e.code
        except OSError:
            return None

    def metrics(self, agent="dra"):
        base = {"dra": self.dra_http, "nri": self.nri_http}[agent]
        with urllib.request.urlopen(base + "/metrics", timeout=5) as r:
            return r.read().decode()

    # --- added for the node_*_e2e suite ------------------------------------------------------

    def start_without_nri_agent(self):
        """The apiserver, the runtime and the dra-agent; the nri-agent is started later."""
        self._start_apiserver()
        self._start_runtime()
        self.start_dra_agent()

    def write_file(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def add_individual_claim(self, uid, devices, config=None, name=None, namespace="default"):
        """A claim allocated individual-mode devices (one CPU each, no consumedCapacity)."""
        name = name or "claim-" + uid
        body = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                "metadata": {"namespace": namespace, "name": name, "uid": uid},
                "spec": {"devices": {"requests": [{"name": "cpus",
                                                   "exactly": {"deviceClassName": DRIVER}}]}},
                "status": {"allocation": {"devices": {
                    "results": [{"request": "cpus", "driver": DRIVER, "pool": self.node_name,
                                 "device": d} for d in devices],
                    "config": config or []}}}}
        req = urllib.request.Request(self.api_url + "/_sim/resourceclaims", method="POST",
                                     data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        urllib.request.urlopen(req, timeout=5).read()
        self._claims[uid] = "%s/%s/%s" % (namespace, name, uid)

    def restart_kubelet(self):
        """A kubelet restart: a new session registers the (running) dra-agent again."""
        self._start_kubelet()

    def kubelet_cli(self, *args, timeout=60):
        """One dracpu-sim-kubelet process (it registers first); (exit code, parsed stdout)."""
        r = subprocess.run([self._bin("tests/sim/kubelet/dracpu-sim-kubelet"), "--registry-dir",
                            os.path.join(self.kubelet_dir, "plugins_registry"), *args],
                           capture_output=True, text=True, timeout=timeout)
        try:
            out = json.loads(r.stdout) if r.stdout.strip() else {}
        except ValueError:
            out = {"error": r.stdout + r.stderr}
        return r.returncode, out

    def health(self, n=1):
        """The first n updates of the dra-agent's health stream (raises on a transport error)."""
        rc, out = self.kubelet_cli("health", str(n), timeout=90)
        if rc != 0:
            raise RuntimeError("kubelet health: rc %d: %s" % (rc, out))
        return out

    def slices(self):
        with urllib.request.urlopen(self.api_url + "/apis/resource.k8s.io/v1/resourceslices",
                                    timeout=5) as r:
            return [s for s in json.loads(r.read().decode())["items"]
                    if s["spec"].get("nodeName") == self.node_name]

    def devices(self):
        return {d["name"]: d for s in self.slices() for d in s["spec"].get("devices", [])}

    def delete_slices(self):
        """Deletes this node's ResourceSlices one by one, as the kubelet does when it starts."""
        n = 0
        for s in self.slices():
            req = urllib.request.Request(self.api_url + "/apis/resource.k8s.io/v1/resourceslices/" +
                                         s["metadata"]["name"], method="DELETE")
            try:
                urllib.request.urlopen(req, timeout=5).read()
                n += 1
            except urllib.error.HTTPError as e:
                if e.code != 404:
                    raise
        return n

    def set_cpu_online(self, cpu, online):
        """CPU hotplug in the machine tree, which must be this node's own writable copy (the
        `machine=` extraction): cpuN/online, and the online and offline list files."""
        if not self.sysfs_root.startswith(self.tmp + os.sep):
            raise ValueError("set_cpu_online needs the node's own sysfs copy (machine=...)")
        base = os.path.join(self.sysfs_root, "sys", "devices", "system", "cpu")

        def rewrite(name, add, remove):
            path = os.path.join(base, name)
            cur = set()
            if os.path.exists(path):
                with open(path) as f:
                    cur = cpulist(f.read())
            with open(path + ".tmp", "w") as f:
                f.write(fmt((cur | add) - remove) + "\n")
            os.rename(path + ".tmp", path)

        with open(os.path.join(base, "cpu%d" % cpu, "online"), "w") as f:
            f.write("1\n" if online else "0\n")
        rewrite("offline", set() if online else {cpu}, {cpu} if online else set())
        rewrite("online", {cpu} if online else set(), set() if online else {cpu})
