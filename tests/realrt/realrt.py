#!/usr/bin/python3
"""Real containerd in our own tests (issue 14): both dracpu agents against containerd 1.7.24
(Debian trixie) and 2.1.9 (Debian sid) with runc on cgroupfs, driven through CRI the way the
kubelet drives it, asserting on the kernel's truth (docs/real-runtimes.md).

    realrt.py BUILD_DIR [--suite trixie|sid ...] [--junit FILE]

Per suite: tests/realrt/chroots.sh makes or reuses the chroot in the cache (DRACPU_REALRT_CACHE,
default /var/cache/dracpu-realrt); the CRI client is generated here from CRI's own api.proto
(sid's golang-k8s-cri-api-dev) with grpc_tools into a temp dir; a tiny OCI image (static busybox,
`sleep infinity`) is imported with ctr; containerd runs chrooted with NRI and CDI on, its root and
state on per-run directories. The dra-agent (this machine's sysfs, claims from the apiserver
simulator, prepared through the kubelet simulator) and the nri-agent run on the host
(tests/e2e/whole_node.py). Every case checks cgroup cpuset.cpus, Cpus_allowed_list and the env
injected through CDI (/proc/<pid>/environ).

Everything started is stopped by PID (pods through CRI, then containerd, then any process left
whose root is the chroot), everything mounted is unmounted, every cgroup made is removed.
Prints one line per check and ends with "N passed, N failed" over the cases. Exit 0 when all
passed, 1 otherwise, 2 on a set-up error (no root, no mirror: the message says which).
"""
import argparse
import errno
import hashlib
import io
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import traceback
import xml.sax.saxutils

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
from whole_node import WholeNode, cpulist, fmt  # noqa: E402

CACHE = os.environ.get("DRACPU_REALRT_CACHE", "/var/cache/dracpu-realrt")
IMAGE = "localhost/dracpu-realrt/busybox:1"
CRI_TIMEOUT = 60  # seconds for one CRI call; the concurrency watchdog uses its own budget
WATCHDOG = 45     # seconds without any CRI call completing = a hung runtime


class Fail(Exception):
    pass


def sh(*args, **kw):
    return subprocess.run(args, check=True, capture_output=True, text=True, **kw).stdout


def read(path):
    with open(path) as f:
        return f.read()


# --- chroot, mounts, cgroups -----------------------------------------------------------------

class Chroot:
    """The suite's chroot mounted for one run: itself (a mount point, for containerd 2.1's
    snapshotters), /proc, /dev, /sys (rslave), fresh /run and /tmp (tmpfs), and per-run
    /var/lib/containerd and CDI directories."""

    def __init__(self, root, work, cdi_dir):
        self.root = os.path.realpath(root)
        self.work = work
        self.cdi_dir = cdi_dir

    def path(self, p):
        return os.path.join(self.root, p.lstrip("/"))

    def mount(self):
        m = lambda *a: subprocess.run(["mount", *a], check=True)  # noqa: E731
        m("--bind", self.root, self.root)
        m("--make-private", self.root)
        m("-t", "proc", "proc", self.path("/proc"))
        for d in ("/dev", "/sys"):
            m("--rbind", d, self.path(d))
            m("--make-rslave", self.path(d))
        for d in ("/run", "/tmp"):
            m("-t", "tmpfs", "tmpfs", self.path(d))
        lib = os.path.join(self.work, "containerd-root")
        os.makedirs(lib)
        os.makedirs(self.path("/var/lib/containerd"), exist_ok=True)
        m("--bind", lib, self.path("/var/lib/containerd"))
        os.makedirs(self.path("/run/cdi"))
        m("--bind", self.cdi_dir, self.path("/run/cdi"))
        # Host-network pods copy these (minbase has neither).
        for name, text in (("hosts", "127.0.0.1 localhost\n::1 localhost\n"),
                           ("resolv.conf", "")):
            if not os.path.exists(self.path("/etc/" + name)):
                with open(self.path("/etc/" + name), "w") as f:
                    f.write(text)

    def processes(self):
        """PIDs of processes whose root is this chroot (containerd, shims, containers)."""
        out = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                if os.path.realpath("/proc/%s/root" % pid) == self.root:
                    out.append(int(pid))
            except OSError:
                pass
        return out

    def unmount(self):
        """Everything mounted at or below the root, deepest first."""
        for _ in range(3):
            points = []
            for line in read("/proc/self/mountinfo").splitlines():
                p = line.split()[4]
                if p == self.root or p.startswith(self.root + "/"):
                    points.append(p)
            if not points:
                return
            for p in sorted(points, key=len, reverse=True):
                r = subprocess.run(["umount", p], capture_output=True)
                if r.returncode != 0:
                    subprocess.run(["umount", "-l", p], capture_output=True)


def remove_cgroups(name):
    """rmdir every cgroup called `name` (and below) in each cgroup v1 hierarchy."""
    left = []
    for ctrl in os.listdir("/sys/fs/cgroup"):
        top = os.path.join("/sys/fs/cgroup", ctrl, name)
        if not os.path.isdir(top):
            continue
        for dirpath, dirs, _ in sorted(os.walk(top), key=lambda w: -len(w[0])):
            try:
                os.rmdir(dirpath)
            except OSError:
                left.append(dirpath)
    return left


# --- containerd ------------------------------------------------------------------------------

def containerd_config(chroot, sandbox_image):
    """`containerd config default` of this very binary, with NRI and CDI on, cgroupfs, our
    sandbox image, and restrict_oom_score_adj (these VMs' root lacks CAP_SYS_RESOURCE)."""
    text = subprocess.run(["chroot", chroot.root, "/usr/bin/containerd", "config", "default"],
                          check=True, capture_output=True, text=True).stdout
    out, section = [], ""
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("["):
            section = s
        key = s.split("=")[0].strip()
        indent = line[:len(line) - len(line.lstrip())]
        if key == "sandbox_image":
            line = '%ssandbox_image = "%s"' % (indent, sandbox_image)
        elif key == "sandbox" and "pinned_images" in section:
            line = "%ssandbox = '%s'" % (indent, sandbox_image)
        elif key in ("enable_cdi", "restrict_oom_score_adj", "disable_apparmor"):
            line = "%s%s = true" % (indent, key)
        elif key == "disable" and "nri.v1.nri" in section:
            line = "%sdisable = false" % indent
        elif key == "SystemdCgroup":
            line = "%sSystemdCgroup = false" % indent
        out.append(line)
    return "\n".join(out) + "\n"


class Containerd:
    def __init__(self, chroot, log_path):
        self.chroot = chroot
        self.log_path = log_path
        self.proc = None
        self.socket = chroot.path("/run/containerd/containerd.sock")
        self.hung = False  # a watchdog saw it hang: the clean-up makes no CRI call

    def start(self):
        log = open(self.log_path, "a")
        self.proc = subprocess.Popen(
            ["chroot", self.chroot.root, "/usr/bin/containerd", "--config",
             "/etc/dracpu-realrt.toml", "--log-level", "info"],
            stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        deadline = time.time() + 60
        while not os.path.exists(self.socket):
            if self.proc.poll() is not None or time.time() > deadline:
                raise Fail("containerd did not start:\n" + read(self.log_path)[-3000:])
            time.sleep(0.1)

    def stop(self, sig=signal.SIGTERM):
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def goroutine_dump(self):
        """SIGUSR1: containerd writes its goroutine stacks (to its log, or a file in /tmp)."""
        if self.proc is None or self.proc.poll() is not None:
            return "(containerd not running)"
        self.hung = True
        os.kill(self.proc.pid, signal.SIGUSR1)
        time.sleep(3)
        out = read(self.log_path)[-20000:]
        tmp = self.chroot.path("/tmp")
        for name in sorted(os.listdir(tmp)):
            if "stacks" in name:
                out += "\n--- %s ---\n%s" % (name, read(os.path.join(tmp, name))[-40000:])
        return out


def oci_image(busybox, name):
    """An OCI image archive (bytes): static busybox as /bin/sleep and /bin/sh."""
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w") as t:
        for d in ("bin", "tmp", "proc", "sys", "dev", "etc"):
            info = tarfile.TarInfo(d)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            t.addfile(info)
        t.add(busybox, arcname="bin/busybox")
        for tool in ("sleep", "sh", "cat"):
            info = tarfile.TarInfo("bin/" + tool)
            info.type, info.linkname = tarfile.SYMTYPE, "busybox"
            t.addfile(info)
    layer = layer.getvalue()
    blobs = {}

    def blob(data):
        digest = hashlib.sha256(data).hexdigest()
        blobs[digest] = data
        return {"digest": "sha256:" + digest, "size": len(data)}

    lb = blob(layer)
    config = json.dumps({
        "architecture": "amd64", "os": "linux",
        "config": {"Entrypoint": ["/bin/sleep", "infinity"], "Env": ["PATH=/bin"]},
        "rootfs": {"type": "layers", "diff_ids": [lb["digest"]]}}).encode()
    cb = blob(config)
    manifest = json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": dict(cb, mediaType="application/vnd.oci.image.config.v1+json"),
        "layers": [dict(lb, mediaType="application/vnd.oci.image.layer.v1.tar")]}).encode()
    mb = blob(manifest)
    index = json.dumps({"schemaVersion": 2, "manifests": [dict(
        mb, mediaType="application/vnd.oci.image.manifest.v1+json",
        annotations={"io.containerd.image.name": name,
                     "org.opencontainers.image.ref.name": name.rsplit(":", 1)[1]})]}).encode()
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as t:
        def add(path, data):
            info = tarfile.TarInfo(path)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
        add("oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
        add("index.json", index)
        for digest, data in blobs.items():
            add("blobs/sha256/" + digest, data)
    return out.getvalue()


def cri_client(workdir):
    """api_pb2 and api_pb2_grpc generated from CRI's api.proto (debug_redact stripped: Debian
    12's protoc does not know it)."""
    gen = os.path.join(workdir, "cri")
    os.makedirs(gen)
    with open(os.path.join(CACHE, "cri-api", "api.proto")) as f:
        proto = f.read().replace("[debug_redact = true]", "")
    with open(os.path.join(gen, "api.proto"), "w") as f:
        f.write(proto)
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", "-I", gen, "--python_out", gen,
                    "--grpc_python_out", gen, os.path.join(gen, "api.proto")], check=True)
    sys.path.insert(0, gen)
    import api_pb2  # noqa: E402
    import api_pb2_grpc  # noqa: E402
    return api_pb2, api_pb2_grpc


# --- the node: both agents on this machine, containerd as the runtime -------------------------

class RealNode(WholeNode):
    """whole_node.WholeNode without the runtime simulator: the nri-agent connects to the
    chrooted containerd's NRI socket."""

    def __init__(self, build, nri_socket, nri_config=None):
        super().__init__(build, sysfs_root="/", tmp_prefix="dracpu-realrt-", log=lambda *_: None)
        self.nri_socket = nri_socket
        self.nri_config = nri_config

    def start(self):
        self._start_apiserver()
        self.start_dra_agent()
        self.start_nri_agent()

    def start_nri_agent(self):
        offset = self._log_size("nri-agent")
        args = [self._bin("nri-agent/dracpu-nri-agent"), "--nri-socket", self.nri_socket,
                "--shm-path", self.shm_path, "--sysfs-root", "/", "--bind-address", "127.0.0.1:0"]
        if self.nri_config:
            args += ["--config", self.write_file("nri-config.yaml", self.nri_config)]
        self._spawn("nri-agent", args)
        self.nri_http = self._port_from_log("nri-agent", r", http (\d+)", offset)
        self._wait_plugin()

    def _wait_plugin(self, timeout_ms=30000):
        self.wait_for(lambda: self._http_status(self.nri_http + "/readyz") == 200,
                      "the nri-agent to be synchronized by containerd", timeout=timeout_ms / 1000)


class Cri:
    """The kubelet's side of CRI, and the kernel's view of each container."""

    def __init__(self, pb, grpc_mod, socket, cgroup_parent):
        import grpc
        self.pb = pb
        self.grpc = grpc
        self.channel = grpc.insecure_channel("unix://" + socket)
        self.rt = grpc_mod.RuntimeServiceStub(self.channel)
        self.cgroup_parent = cgroup_parent
        self.pods = {}  # name -> (id, config)

    def call(self, method, req, timeout=CRI_TIMEOUT):
        return getattr(self.rt, method)(req, timeout=timeout)

    def version(self):
        return self.call("Version", self.pb.VersionRequest()).runtime_version

    def serving(self):
        """True once CRI answers and says RuntimeReady, as the kubelet waits for it. After a
        containerd restart the channel's first calls can fail with UNAVAILABLE (a broken pipe on
        the old connection) until it reconnects, and Version answers before the CRI service has
        loaded its containers (other calls fail UNKNOWN "server is not initialized yet")."""
        try:
            st = self.call("Status", self.pb.StatusRequest())
        except self.grpc.RpcError as e:
            if e.code() == self.grpc.StatusCode.UNAVAILABLE or "not initialized" in (e.details() or ""):
                return False
            raise
        return any(c.type == "RuntimeReady" and c.status for c in st.status.conditions)

    def run_pod(self, name):
        pb = self.pb
        uid = "uid-" + name
        config = pb.PodSandboxConfig(
            metadata=pb.PodSandboxMetadata(name=name, uid=uid, namespace="default"),
            hostname="",  # runc 1.3 refuses a hostname without a private UTS namespace
            linux=pb.LinuxPodSandboxConfig(
                cgroup_parent=self.cgroup_parent + "/pod-" + name,
                security_context=pb.LinuxSandboxSecurityContext(
                    namespace_options=pb.NamespaceOption(network=pb.NODE))))
        pod_id = self.call("RunPodSandbox", pb.RunPodSandboxRequest(config=config)).pod_sandbox_id
        self.pods[name] = (pod_id, config)
        return pod_id

    def create(self, pod, name, cdi=(), env=(), attempt=0, start=True):
        """CreateContainer (+ StartContainer); the container id. Raises grpc.RpcError."""
        pb = self.pb
        pod_id, pod_config = self.pods[pod]
        config = pb.ContainerConfig(
            metadata=pb.ContainerMetadata(name=name, attempt=attempt),
            image=pb.ImageSpec(image=IMAGE), command=["/bin/sleep", "infinity"],
            envs=[pb.KeyValue(key=k, value=v.encode()) for k, v in
                  (e.split("=", 1) for e in env)],
            CDI_devices=[pb.CDIDevice(name=d) for d in cdi],
            linux=pb.LinuxContainerConfig(resources=pb.LinuxContainerResources(cpu_shares=512)))
        cid = self.call("CreateContainer", pb.CreateContainerRequest(
            pod_sandbox_id=pod_id, config=config, sandbox_config=pod_config)).container_id
        if start:
            self.call("StartContainer", pb.StartContainerRequest(container_id=cid))
        return cid

    def update(self, cid, cpus="", shares=0, timeout=CRI_TIMEOUT):
        pb = self.pb
        res = pb.LinuxContainerResources(cpuset_cpus=cpus, cpu_shares=shares or 1024,
                                         cpu_period=100000, cpu_quota=-1)
        self.call("UpdateContainerResources",
                  pb.UpdateContainerResourcesRequest(container_id=cid, linux=res), timeout=timeout)

    def stop(self, cid):
        self.call("StopContainer", self.pb.StopContainerRequest(container_id=cid, timeout=0))

    def remove(self, cid):
        self.call("RemoveContainer", self.pb.RemoveContainerRequest(container_id=cid))

    def remove_all_pods(self):
        for name, (pod_id, _) in list(self.pods.items()):
            try:
                self.call("StopPodSandbox", self.pb.StopPodSandboxRequest(pod_sandbox_id=pod_id), 30)
                self.call("RemovePodSandbox", self.pb.RemovePodSandboxRequest(pod_sandbox_id=pod_id), 30)
            except self.grpc.RpcError:
                pass
            del self.pods[name]

    def pid(self, cid):
        """The container's process, once it runs the image's program: StartContainer can return
        while runc's init is still about to exec it (its environ and comm are runc's then)."""
        st = self.call("ContainerStatus", self.pb.ContainerStatusRequest(container_id=cid, verbose=True))
        pid = json.loads(st.info["info"])["pid"]
        deadline = time.monotonic() + 10
        while read("/proc/%d/comm" % pid).startswith("runc") and time.monotonic() < deadline:
            time.sleep(0.01)
        return pid

    def state(self, cid):
        st = self.call("ContainerStatus", self.pb.ContainerStatusRequest(container_id=cid))
        return self.pb.ContainerState.Name(st.status.state)

    def kernel(self, cid):
        """(cgroup cpuset.cpus, Cpus_allowed_list, {DRA_CPUSET_*: value}) of the container."""
        pid = self.pid(cid)
        path = next(line.split(":", 2)[2] for line in read("/proc/%d/cgroup" % pid).splitlines()
                    if ":cpuset:" in line)
        cg = cpulist(read("/sys/fs/cgroup/cpuset%s/cpuset.cpus" % path).strip())
        allowed = next(cpulist(line.split(":", 1)[1].strip())
                       for line in read("/proc/%d/status" % pid).splitlines()
                       if line.startswith("Cpus_allowed_list:"))
        with open("/proc/%d/environ" % pid, "rb") as f:
            env = dict(e.decode().split("=", 1) for e in f.read().split(b"\0")
                       if e.startswith(b"DRA_CPUSET_"))
        return cg, allowed, env

    def cpus(self, cid):
        cg, allowed, _ = self.kernel(cid)
        if cg != allowed:
            raise Fail("container %s: cgroup cpuset.cpus %s but Cpus_allowed_list %s" %
                       (cid[:12], fmt(cg), fmt(allowed)))
        return cg


# --- the cases -------------------------------------------------------------------------------

class Suite:
    def __init__(self, name, version, node, cri, containerd, results, log):
        self.name, self.version = name, version
        self.node, self.cri, self.containerd = node, cri, containerd
        self.results = results
        self.log = log
        self.all = cpulist(read("/sys/devices/system/cpu/online").strip())
        self.c = {}  # our names -> container ids

    def check(self, cond, what):
        if not cond:
            raise Fail(what)
        self.log("  ok: " + what)

    def case(self, title, fn):
        start = time.time()
        try:
            fn()
            self.results.append((self.version, title, None, time.time() - start))
            self.log("PASS %s: %s (%.1f s)" % (self.version, title, time.time() - start))
        except Exception as e:  # noqa: BLE001  a failed case must not stop the others
            if isinstance(e, self.cri.grpc.RpcError):
                detail = "CRI %s: %s (at %s)" % (e.code(), e.details(),
                                                 traceback.extract_tb(e.__traceback__)[-3].line)
            elif isinstance(e, Fail):
                detail = str(e)
            else:
                detail = "%s: %s\n%s" % (type(e).__name__, e, traceback.format_exc())
            self.results.append((self.version, title, detail, time.time() - start))
            self.log("FAIL %s: %s: %s" % (self.version, title, detail))

    def rpc_error(self, fn):
        """The error message of a CRI call that must fail (None when it succeeded)."""
        try:
            fn()
        except self.cri.grpc.RpcError as e:
            return e.details()
        return None

    def prepare(self, uid, count=1):
        self.node.add_claim(uid, "cpudevnuma000", count)
        out = self.node.prepare(uid)[uid]
        if out["error"]:
            raise Fail("Prepare of %s: %s" % (uid, out["error"]))
        return out["devices"][0]["cdiDeviceIds"], self.node.claim_cpus(uid)

    # Each case builds on the previous ones' containers.
    def run(self):
        self.case("shared container gets the whole pool", self.shared)
        self.case("exclusive container through CDI, shared ones shrink", self.exclusive)
        self.case("CRI resize of shared and exclusive containers", self.resize)
        self.case("forged, malformed and foreign env, claim sharing refused", self.refusals)
        self.case("container restart keeps the claim's CPUs", self.container_restart)
        self.case("nri-agent SIGKILL and restart", self.nri_agent_restart)
        self.case("containerd restart with containers kept", self.containerd_restart)
        self.case("unprepare, then the next event widens back (default config)", self.widen)
        self.case("concurrent UpdateContainerResources while claims come and go", self.concurrent)

    def shared(self):
        self.cri.run_pod("web")
        self.c["web"] = self.cri.create("web", "web")
        cpus = self.cri.cpus(self.c["web"])
        self.check(cpus == self.all, "web runs on every CPU %s" % fmt(cpus))

    def exclusive(self):
        self.uid_a = "aaaaaaaa-1414-4000-8000-%012d" % random.randrange(10**12)
        self.cdi_a, self.cpus_a = self.prepare(self.uid_a)
        self.pool = self.all - self.cpus_a
        self.check(self.cri.cpus(self.c["web"]) == self.all,
                   "a prepared claim without a container takes nothing from web (lazy shrink)")
        self.cri.run_pod("pa")
        self.c["a"] = self.cri.create("pa", "app", cdi=self.cdi_a)
        cg, allowed, env = self.cri.kernel(self.c["a"])
        self.check(cg == self.cpus_a and allowed == self.cpus_a,
                   "claim A's container pinned to %s (cgroup %s, affinity %s)" %
                   (fmt(self.cpus_a), fmt(cg), fmt(allowed)))
        want = {"DRA_CPUSET_" + self.uid_a: fmt(self.cpus_a)}
        self.check(env == want, "CDI injected %s" % env)
        # KEP-5304: the metadata file, bind-mounted read-only by the metadata CDI spec.
        meta = "/proc/%d/root/var/run/kubernetes.io/dra-device-attributes/resourceclaims/claim-%s/cpus/" \
            "dra.cpu-metadata.json" % (self.cri.pid(self.c["a"]), self.uid_a)
        doc = json.loads(read(meta))
        dev = doc["requests"][0]["devices"][0]
        self.check(doc["apiVersion"] == "metadata.resource.k8s.io/v1beta1" and dev["driver"] == "dra.cpu" and
                   dev["attributes"]["dra.cpu/allocatedNumCPUs"]["int"] == len(self.cpus_a),
                   "device metadata inside the container: %s CPU(s) of %s" % (len(self.cpus_a), dev["name"]))
        try:
            open(meta, "a").close()
            self.check(False, "the metadata file is read-only in the container")
        except OSError as e:
            self.check(e.errno == errno.EROFS, "the metadata file is read-only in the container (%s)" % e)
        self.check(self.cri.cpus(self.c["web"]) == self.pool,
                   "web shrank to the pool %s in the creation's reply" % fmt(self.pool))

    def resize(self):
        self.cri.update(self.c["web"], cpus=fmt(self.cpus_a), shares=2048)
        self.check(self.cri.cpus(self.c["web"]) == self.pool,
                   "resizing web onto claim A's CPUs: re-asserted to the pool")
        self.cri.update(self.c["a"], cpus=fmt(self.all), shares=4096)
        self.check(self.cri.cpus(self.c["a"]) == self.cpus_a,
                   "resizing claim A's container to every CPU: re-asserted to its claim")
        self.cri.update(self.c["a"], shares=1536)
        self.check(self.cri.cpus(self.c["a"]) == self.cpus_a, "a CPU-shares resize keeps the cpuset")

    def refusals(self):
        self.cri.run_pod("bad")
        bogus = "dddddddd-1414-4000-8000-000000000001"
        for env, want, what in (
                (["DRA_CPUSET_%s=%s" % (bogus, fmt(self.cpus_a))], "not prepared", "forged env"),
                (["DRA_CPUSET_%s=1-" % self.uid_a], "DRA_CPUSET_", "malformed env"),
                (["DRA_CPUSET_%s=%s" % (self.uid_a, fmt(self.all))], "does not match",
                 "foreign CPUs for a real claim")):
            err = self.rpc_error(lambda: self.cri.create("bad", "x", env=env, start=False))
            self.check(err is not None and want in err, "%s refused: %s" % (what, err))
        err = self.rpc_error(lambda: self.cri.create("bad", "y", cdi=self.cdi_a, start=False))
        self.check(err is not None and "already used" in err, "claim sharing refused: %s" % err)

    def container_restart(self):
        self.cri.stop(self.c["a"])
        self.c["a"] = self.cri.create("pa", "app", cdi=self.cdi_a, attempt=1)
        self.check(self.cri.cpus(self.c["a"]) == self.cpus_a,
                   "the restarted container (attempt 1) is on claim A's CPUs again")
        self.check(self.cri.cpus(self.c["web"]) == self.pool, "web still on the pool")

    def snapshot(self):
        return {n: self.cri.cpus(cid) for n, cid in self.c.items()}

    def nri_agent_restart(self):
        before = self.snapshot()
        self.node.kill_nri_agent(signal.SIGKILL)
        self.node.start_nri_agent()
        self.check(self.snapshot() == before, "cpusets unchanged after SIGKILL and resync")
        err = self.rpc_error(lambda: self.cri.create("bad", "z", cdi=self.cdi_a, start=False))
        self.check(err is not None and "already used" in err, "still enforcing: %s" % err)

    def containerd_restart(self):
        before = self.snapshot()
        pids = {n: self.cri.pid(cid) for n, cid in self.c.items()}
        self.containerd.stop()
        self.containerd.start()
        self.node.wait_for(self.cri.serving, "CRI to answer again", timeout=60)
        self.node.wait_for(lambda: self.node._http_status(self.node.nri_http + "/readyz") == 200,
                           "the nri-agent to reconnect", timeout=60)
        self.check({n: self.cri.pid(cid) for n, cid in self.c.items()} == pids,
                   "containers kept running across the restart (same pids)")
        self.check(self.snapshot() == before, "cpusets unchanged")
        self.cri.run_pod("web3")
        self.c["web3"] = self.cri.create("web3", "web")
        self.check(self.cri.cpus(self.c["web3"]) == self.pool, "a new shared container gets the pool")

    def widen(self):
        self.cri.stop(self.c["a"])
        self.cri.remove(self.c["a"])
        del self.c["a"]
        out = self.node.unprepare(self.uid_a)[self.uid_a]
        self.check(out["error"] == "", "claim A unprepared")
        self.check(not os.path.exists(os.path.join(self.node.cdi_dir,
                                                   "dra.k8s.io-cpu_claim-%s.json" % self.uid_a)),
                   "its CDI spec is gone")
        err = self.rpc_error(lambda: self.cri.create("pa", "app", cdi=self.cdi_a, attempt=2,
                                                     start=False))
        self.check(err is not None, "its CDI device no longer resolves: %s" % (err or "")[:120])
        released = time.time()
        self.check(self.cri.cpus(self.c["web"]) == self.pool,
                   "before any event the running shared containers keep the pool %s" % fmt(self.pool))
        self.cri.run_pod("web2")
        self.c["web2"] = self.cri.create("web2", "web")
        took = time.time() - released
        for n in ("web", "web3", "web2"):
            self.check(self.cri.cpus(self.c[n]) == self.all,
                       "%s widened back to %s by the next CreateContainer's reply" % (n, fmt(self.all)))
        self.log("  note: release to widened: %.2f s (the next event)" % took)

    def concurrent(self):
        """Two kubelet-like callers resize the shared containers back to back while claims are
        prepared, used and released; a watchdog turns a hang into a failure with containerd's
        goroutine dump."""
        shared = [self.c["web"], self.c["web2"]]
        stop = threading.Event()
        progress = [time.time()]
        errors = []
        counts = [0]

        def resize(cid, seed):
            rng = random.Random(seed)
            while not stop.is_set():
                try:
                    self.cri.update(cid, cpus=rng.choice(["", "", fmt(self.all)]),
                                    shares=rng.randrange(2, 4096), timeout=WATCHDOG)
                    counts[0] += 1
                    progress[0] = time.time()
                except self.cri.grpc.RpcError as e:
                    if e.code() == self.cri.grpc.StatusCode.NOT_FOUND:
                        continue
                    errors.append("UpdateContainerResources: %s %s" % (e.code(), e.details()))
                    return

        threads = [threading.Thread(target=resize, args=(cid, i), daemon=True)
                   for i, cid in enumerate(shared)]
        for t in threads:
            t.start()
        hung = [None]

        def watchdog():
            while not stop.is_set():
                if time.time() - progress[0] > WATCHDOG:
                    hung[0] = self.containerd.goroutine_dump()
                    stop.set()
                    return
                time.sleep(1)

        dog = threading.Thread(target=watchdog, daemon=True)
        dog.start()
        cycles = 0
        stuck = None  # what the main loop's own call raised while the watchdog saw the hang
        try:
            for i in range(6):
                if stop.is_set():
                    break
                uid = "cccccccc-1414-4000-8000-%012d" % random.randrange(10**12)
                cdi, cpus = self.prepare(uid)
                pod = "pc%d" % i
                self.cri.run_pod(pod)
                cid = self.cri.create(pod, "app", cdi=cdi)
                progress[0] = time.time()
                if self.cri.cpus(cid) != cpus:
                    raise Fail("cycle %d: exclusive container on %s, claim %s" %
                               (i, fmt(self.cri.cpus(cid)), fmt(cpus)))
                for s in shared:
                    if self.cri.cpus(s) & cpus:
                        raise Fail("cycle %d: shared container on claim CPUs %s" % (i, fmt(cpus)))
                self.cri.stop(cid)
                self.cri.remove(cid)
                out = self.node.unprepare(uid)[uid]
                if out["error"]:
                    raise Fail("cycle %d: unprepare: %s" % (i, out["error"]))
                progress[0] = time.time()
                cycles += 1
                time.sleep(0.5)  # resizes meanwhile: their replies widen
        except self.cri.grpc.RpcError as e:
            # A CRI call of this loop timed out (CRI_TIMEOUT) after the watchdog (WATCHDOG, shorter)
            # saw the hang: the hang and its dump are the failure, not the timeout.
            settle = time.time() + 5  # the dump takes a few seconds to write
            while hung[0] is None and dog.is_alive() and time.time() < settle:
                time.sleep(0.2)
            if hung[0] is None:
                raise
            stuck = "%s %s" % (e.code(), e.details())
        finally:
            stop.set()
            for t in threads:
                t.join(WATCHDOG + 5)
        if hung[0] is not None:
            raise Fail("containerd hung (no CRI call completed in %d s%s); goroutine dump:\n%s" %
                       (WATCHDOG, "; the claim cycle's call ended with " + stuck if stuck else "",
                        hung[0]))
        self.check(not errors, "no resize failed: %s" % errors[:3])
        self.check(cycles == 6, "6 claim cycles under %d concurrent resizes, no hang" % counts[0])
        self.cri.update(shared[0], shares=1024)
        for s in shared:
            self.check(self.cri.cpus(s) == self.all, "shared container widened back to every CPU")


# --- one containerd version ------------------------------------------------------------------

class RealRuntime:
    """One chrooted containerd of `suite` with both agents and a CRI client, set up by start()
    and taken down by stop() (pods through CRI, containerd by PID, leftover processes of the
    chroot by PID, mounts, cgroups, the run directory). Also used by `make demo
    RUNTIME=containerd` (tests/demo/containerd_demo.py)."""

    def __init__(self, build, suite, pb, pb_grpc, log=print):
        self.build, self.suite, self.pb, self.pb_grpc, self.log = build, suite, pb, pb_grpc, log
        root = os.path.join(CACHE, suite)
        stamp = read(os.path.join(CACHE, suite + ".ready"))
        self.version = "containerd " + next(line.split()[1] for line in stamp.splitlines()
                                            if line.startswith("containerd "))
        self.work = tempfile.mkdtemp(prefix="run-%d-" % os.getpid(), dir=CACHE)
        self.cdi_dir = os.path.join(self.work, "cdi")
        os.makedirs(self.cdi_dir)
        self.cgroup_name = "dracpu-realrt-%d" % os.getpid()
        self.chroot = Chroot(root, self.work, self.cdi_dir)
        self.containerd = Containerd(self.chroot, os.path.join(self.work, "containerd.log"))
        self.node = self.cri = None

    def start(self):
        chroot = self.chroot
        chroot.mount()
        with open(chroot.path("/etc/dracpu-realrt.toml"), "w") as f:
            f.write(containerd_config(chroot, IMAGE))
        self.containerd.start()
        with open(chroot.path("/tmp/image.tar"), "wb") as f:
            f.write(oci_image(chroot.path("/bin/busybox"), IMAGE))
        subprocess.run(["chroot", chroot.root, "ctr", "-n", "k8s.io", "--address",
                        "/run/containerd/containerd.sock", "images", "import", "/tmp/image.tar"],
                       check=True, capture_output=True)
        self.node = RealNode(self.build, chroot.path("/run/nri/nri.sock"))
        self.node.cdi_dir = self.cdi_dir  # the dra-agent writes CDI specs where containerd reads
        # The KEP-5304 metadata specs bind-mount files of the kubelet's plugin directory (host
        # paths, as on a node): runc, chrooted here, must see them at the same path.
        os.makedirs(self.node.kubelet_dir, exist_ok=True)
        os.makedirs(chroot.path(self.node.kubelet_dir), exist_ok=True)
        subprocess.run(["mount", "--bind", self.node.kubelet_dir, chroot.path(self.node.kubelet_dir)],
                       check=True)
        self.node.start()
        self.cri = Cri(self.pb, self.pb_grpc, self.containerd.socket, "/" + self.cgroup_name)
        return self

    def stop(self, show_logs=False):
        """Everything down; the cgroups that could not be removed (none normally)."""
        # A hung containerd would make every CRI call wait out its timeout: it is killed instead
        # (its shims and containers by PID below).
        if self.cri is not None and self.containerd.proc is not None and \
                self.containerd.proc.poll() is None and not self.containerd.hung:
            self.cri.remove_all_pods()
        if self.node is not None:
            if show_logs:
                for name in ("nri-agent", "dra-agent"):
                    if self.node.procs.get(name):
                        self.log("--- %s log ---\n%s" % (name, self.node._log_tail(name, 2000)))
            self.node.cleanup()
        if show_logs and os.path.exists(self.containerd.log_path):
            self.log("--- containerd log ---\n" + read(self.containerd.log_path)[-3000:])
        self.containerd.stop(signal.SIGKILL if self.containerd.hung else signal.SIGTERM)
        for pid in self.chroot.processes():  # shims and containers left behind
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.time() + 10
        while self.chroot.processes() and time.time() < deadline:
            time.sleep(0.1)
        self.chroot.unmount()
        left = remove_cgroups(self.cgroup_name)
        shutil.rmtree(self.work, ignore_errors=True)
        return left


def run_suite(build, suite, pb, pb_grpc, results, log):
    rt = RealRuntime(build, suite, pb, pb_grpc, log)
    start = time.time()
    try:
        rt.start()
        log("== %s (%s, CRI %s) in %s" % (rt.version, suite, rt.cri.version(), rt.chroot.root))
        Suite(suite, rt.version, rt.node, rt.cri, rt.containerd, results, log).run()
    except Exception as e:  # noqa: BLE001  set-up failed: one failed case for this version
        results.append((rt.version, "set-up", "%s: %s\n%s" % (type(e).__name__, e,
                                                             traceback.format_exc()), 0))
        log("FAIL %s: set-up: %s" % (rt.version, e))
    finally:
        failed = any(r[2] for r in results if r[0] == rt.version)
        left = rt.stop(show_logs=failed)
        if left:
            results.append((rt.version, "clean-up", "cgroups left: %s" % left, 0))
        log("== %s done in %.0f s" % (rt.version, time.time() - start))


def prepare_cache(suites):
    """chroots.sh for `suites`, after removing the run directories of killed runs. False (with
    the reason printed) when the chroots cannot be made."""
    for name in os.listdir(CACHE) if os.path.isdir(CACHE) else ():
        parts = name.split("-")
        if name.startswith("run-") and len(parts) > 2 and parts[1].isdigit() and \
                not os.path.exists("/proc/" + parts[1]):
            shutil.rmtree(os.path.join(CACHE, name), ignore_errors=True)
    return subprocess.run(["bash", os.path.join(HERE, "chroots.sh"), *suites]).returncode == 0


def write_junit(path, results):
    with open(path, "w") as f:
        failed = sum(1 for r in results if r[2])
        f.write('<?xml version="1.0" encoding="utf-8"?>\n<testsuites><testsuite name="realrt" '
                'tests="%d" failures="%d">\n' % (len(results), failed))
        for version, title, err, secs in results:
            f.write('<testcase classname=%s name=%s time="%.1f">' % (
                xml.sax.saxutils.quoteattr(version), xml.sax.saxutils.quoteattr(title), secs))
            if err:
                f.write("<failure message=%s/>" % xml.sax.saxutils.quoteattr(err[:4000]))
            f.write("</testcase>\n")
        f.write("</testsuite></testsuites>\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build_dir")
    ap.add_argument("--suite", action="append", choices=("trixie", "sid"))
    ap.add_argument("--junit")
    args = ap.parse_args()
    suites = args.suite or ["trixie", "sid"]
    if os.getuid() != 0:
        print("realrt: needs root (chroot, mounts, cgroups)")
        return 2
    t0 = time.time()
    if not prepare_cache(suites):
        print("realrt: the chroots could not be made (see above)")
        return 2
    print("realrt: chroots ready in %.0f s" % (time.time() - t0), flush=True)
    work = tempfile.mkdtemp(prefix="dracpu-realrt-cri-")
    try:
        import grpc  # noqa: F401
        pb, pb_grpc = cri_client(work)
    except (ImportError, subprocess.CalledProcessError) as e:
        print("realrt: cannot generate the CRI client (python3-grpcio, python3-grpc-tools): %s" % e)
        return 2
    results = []
    log = lambda line: print(line, flush=True)  # noqa: E731
    try:
        for suite in suites:
            run_suite(os.path.abspath(args.build_dir), suite, pb, pb_grpc, results, log)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.junit:
        write_junit(args.junit, results)
    failed = sum(1 for r in results if r[2])
    for version in dict.fromkeys(r[0] for r in results):
        mine = [r for r in results if r[0] == version]
        print("realrt: %s: %d of %d cases passed" % (version, sum(1 for r in mine if not r[2]),
                                                    len(mine)))
    print("realrt: %.0f s in all" % (time.time() - t0))
    print("%d passed, %d failed" % (len(results) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
