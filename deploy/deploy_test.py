#!/usr/bin/env python3
"""make test: every YAML file in deploy/ parses, the chart renders (deploy/render.py) to exactly
deploy/manifests/dracpu.yaml for its defaults, and the deployment invariants hold for the
manifests and for the chart under each deploy/examples/values-*.yaml: two containers in one PID
namespace, the mounts the agents' default flags need, probes on the metrics ports, least
privilege, and RBAC that allows every call `dracpu-dra-agent api-calls` lists and nothing else.
The examples' claims are checked against the attributes the driver publishes and the opaque
config it accepts.

The reference driver's own inputs (deploy/testdata/reference-values.yaml: every key of its chart's
values; reference-config.yaml: every key of its config file) go through our chart and agent
unchanged: rendered, started, and (with the apiserver simulator) publishing for the node and the
topology they name.

usage: deploy_test.py DRACPU_DRA_AGENT [DRACPU_SIM_APISERVER] [unittest args]
"""
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import render  # noqa: E402

AGENT = None  # path of dracpu-dra-agent, from argv
SIM_APISERVER = None  # path of dracpu-sim-apiserver, from argv (optional)

# The nri-agent's flags and defaults (issue 7 item 5; its binary is not in the build yet).
NRI_AGENT_FLAGS = {"nri-socket": "/var/run/nri/nri.sock", "shm-path": "/run/dracpu/state.v1.shm",
                   "sysfs-root": "/", "bind-address": ":8081", "config": "", "plugin-name": "dra.cpu",
                   "plugin-index": "00", "v": "0"}
# A claim's `policy` keys: the config file's placement keys (common/placement_policy.h).
POLICY_KEYS = {"fullPCPUsOnly": bool, "distributeCPUsAcrossNUMA": bool, "alignBySocket": bool,
               "preferAlignCPUsByUncoreCache": bool, "distributeCPUsAcrossCores": bool,
               "alignMemory": bool, "coreType": str}


def load_all(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def yaml_files():
    out = []
    for dirpath, _, names in os.walk(HERE):
        if os.path.join("helm", "dracpu", "templates") in dirpath:
            continue  # Go templates: checked by rendering them
        out += [os.path.join(dirpath, n) for n in names if n.endswith((".yaml", ".yml"))]
    return sorted(out)


def dra_agent_help():
    """{flag: default} from `dracpu-dra-agent --help` ("(default X)" in the help text)."""
    text = subprocess.run([AGENT, "--help"], capture_output=True, text=True, check=True).stdout
    flags = {}
    for line in text.splitlines():
        m = re.match(r"\s+--([a-z0-9-]+)\b(.*)", line)
        if m:
            d = re.search(r"\(default ([^),]+)", m.group(2))
            flags[m.group(1)] = d.group(1) if d else None
    return flags


def api_calls():
    out = subprocess.run([AGENT, "api-calls"], capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def flag_args(container):
    """{flag: value} of a container's --flag=value args."""
    out = {}
    for a in container.get("args", []):
        m = re.fullmatch(r"--?([a-z0-9-]+)(?:=(.*))?", a)
        assert m, f"{container['name']}: argument {a!r} is not --flag=value"
        out[m.group(1)] = m.group(2) if m.group(2) is not None else "true"
    return out


# ------------------------------------------------------------- invariant checks (return errors)
def mounted_host_path(pod, container, path):
    """The hostPath a file or directory `path` in the container resolves to, or None."""
    vols = {v["name"]: v for v in pod["volumes"]}
    best = None
    for m in container.get("volumeMounts", []):
        mp = m["mountPath"].rstrip("/") or "/"
        if path == mp or path.startswith(mp + "/"):
            if best is None or len(mp) > len(best[0]["mountPath"]):
                best = (m, vols.get(m["name"]))
    if best is None or best[1] is None or "hostPath" not in best[1]:
        return None
    m, v = best
    return v["hostPath"]["path"].rstrip("/") + path[len(m["mountPath"].rstrip("/")):]


def check_daemonset(ds, dra_defaults):
    errs = []
    spec = ds["spec"]
    pod = spec["template"]["spec"]
    names = [c["name"] for c in pod["containers"]]
    if names != ["dra-agent", "nri-agent"]:
        return [f"containers are {names}, want [dra-agent, nri-agent]"]
    if pod.get("shareProcessNamespace") is not True:
        errs.append("shareProcessNamespace is not true")
    us = spec.get("updateStrategy", {})
    if us.get("type") != "RollingUpdate" or us.get("rollingUpdate", {}).get("maxSurge") != 0:
        errs.append(f"updateStrategy {us} is not RollingUpdate with maxSurge 0")
    if pod.get("priorityClassName") != "system-node-critical":
        errs.append("priorityClassName is not system-node-critical")
    if pod.get("hostPID") or pod.get("hostIPC"):
        errs.append("hostPID/hostIPC set")
    dra, nri = pod["containers"]
    for c in (dra, nri):
        n = c["name"]
        sc = c.get("securityContext", {})
        if sc.get("privileged") is not False:
            errs.append(f"{n}: privileged is not false")
        if sc.get("allowPrivilegeEscalation") is not False:
            errs.append(f"{n}: allowPrivilegeEscalation is not false")
        if sc.get("capabilities", {}).get("drop") != ["ALL"]:
            errs.append(f"{n}: capabilities do not drop ALL")
        if sc.get("capabilities", {}).get("add"):
            errs.append(f"{n}: adds capabilities {sc['capabilities']['add']} (none are needed)")
        env = {e["name"]: e for e in c.get("env", [])}
        if env.get("NODE_NAME", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") != "spec.nodeName":
            errs.append(f"{n}: NODE_NAME is not from the downward API spec.nodeName")
        # probes on the port the agent listens on
        known = dra_defaults if n == "dra-agent" else NRI_AGENT_FLAGS
        args = flag_args(c)
        for f in args:
            if f not in known:
                errs.append(f"{n}: unknown flag --{f}")
        bind = args.get("bind-address", known["bind-address"])
        port = int(bind.rsplit(":", 1)[1])
        ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
        for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
            g = c.get(probe, {}).get("httpGet", {})
            if g.get("path") != path:
                errs.append(f"{n}: {probe} path {g.get('path')} is not {path}")
            if ports.get(g.get("port"), g.get("port")) != port:
                errs.append(f"{n}: {probe} port {g.get('port')} is not the bind port {port}")
        # /sys read-only from the host
        sysm = [m for m in c.get("volumeMounts", []) if m["mountPath"] == "/sys"]
        if not sysm or not sysm[0].get("readOnly") or mounted_host_path(pod, c, "/sys") != "/sys":
            errs.append(f"{n}: /sys is not the host's /sys mounted read-only")
        for m in c.get("volumeMounts", []):
            if m["mountPath"] != "/sys" and m["mountPath"].startswith("/sys"):
                errs.append(f"{n}: writable mount under /sys")
        root_dir = args.get("kubelet-root-dir", dra_defaults["kubelet-root-dir"]) if n == "dra-agent" else None
        for m in c.get("volumeMounts", []):
            if root_dir and m["mountPath"].rstrip("/") == root_dir and not m.get("readOnly"):
                errs.append(f"{n}: the kubelet root {root_dir} is mounted writable (only its state file is read)")
        if args.get("config") and mounted_host_path(pod, c, args["config"]) is not None:
            errs.append(f"{n}: --config is not read from the ConfigMap")
        if args.get("config"):
            vols = {v["name"]: v for v in pod["volumes"]}
            cm = [m for m in c["volumeMounts"] if args["config"].startswith(m["mountPath"] + "/")]
            if not cm or "configMap" not in vols[cm[0]["name"]]:
                errs.append(f"{n}: --config {args['config']} is not on a ConfigMap volume")
    # The paths each agent uses (flag value, else its default) are the same paths on the host.
    da, na = flag_args(dra), flag_args(nri)
    root = da.get("kubelet-root-dir", dra_defaults["kubelet-root-dir"])
    shm = da.get("shm-path", dra_defaults["shm-path"])
    needs = {
        "dra-agent": [root + "/plugins/dra.cpu/dra.sock", root + "/plugins_registry/dra.cpu-reg.sock",
                      da.get("cdi-root", dra_defaults["cdi-root"]) + "/x.json", shm],
        "nri-agent": [na.get("nri-socket", NRI_AGENT_FLAGS["nri-socket"]),
                      na.get("shm-path", NRI_AGENT_FLAGS["shm-path"])],
    }
    for c in (dra, nri):
        for path in needs[c["name"]]:
            if mounted_host_path(pod, c, path) != path:
                errs.append(f"{c['name']}: {path} is not the host's {path} (hostPath mount)")
    if na.get("shm-path", NRI_AGENT_FLAGS["shm-path"]) != shm:
        errs.append(f"the agents use different shared-memory files ({shm} vs {na.get('shm-path')})")
    reg = root + "/plugins_registry/dra.cpu-reg.sock"
    if len(reg.encode()) > 107:
        errs.append(f"registration socket {reg} is longer than 107 bytes")
    return errs


def rbac_rules_allow(rules, call):
    for r in rules:
        if "*" in r.get("verbs", []):
            continue  # never accepted: checked separately
        if call["verb"] not in r.get("verbs", []):
            continue
        if call["nonResourceURL"]:
            if call["nonResourceURL"] in r.get("nonResourceURLs", []):
                return True
        elif call["apiGroup"] in r.get("apiGroups", []) and call["resource"] in r.get("resources", []):
            return True
    return False


def check_rbac(role, calls):
    errs = []
    rules = role["rules"]
    for call in calls:
        if not rbac_rules_allow(rules, call):
            errs.append(f"ClusterRole does not allow {call}")
    # nothing more than the calls
    wanted = {(c["apiGroup"], c["resource"], c["verb"], c["nonResourceURL"]) for c in calls}
    # The one authorization-only grant: on 1.36+ a status.devices write is also checked against
    # resourceclaims/driver "associated-node:update" for the driver's own name; it is no request.
    driver_check = {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims/driver"],
                    "resourceNames": ["dra.cpu"], "verbs": ["associated-node:update"]}
    if ("resource.k8s.io", "resourceclaims/status", "update", "") in wanted and driver_check not in rules:
        errs.append(f"ClusterRole lacks {driver_check}, which status.devices writes need on 1.36+")
    for r in rules:
        if r == driver_check:
            continue
        if r.get("resourceNames"):
            errs.append(f"unexpected resourceNames in {r}")
        for v in r.get("verbs", []):
            for u in r.get("nonResourceURLs", []):
                if ("", "", v, u) not in wanted:
                    errs.append(f"ClusterRole grants {v} {u}, which the agents never call")
            for g in r.get("apiGroups", []):
                for res in r.get("resources", []):
                    if (g, res, v, "") not in wanted:
                        errs.append(f"ClusterRole grants {v} {g or 'core'}/{res}, which the agents never call")
    return errs


def check_objects(objs, dra_defaults, calls):
    """Invariants over one rendering (a list of Kubernetes objects)."""
    errs = []
    by_kind = {}
    for o in objs:
        by_kind.setdefault(o["kind"], []).append(o)
    for kind in ("DaemonSet", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "DeviceClass"):
        if len(by_kind.get(kind, [])) != 1:
            errs.append(f"want exactly one {kind}, have {len(by_kind.get(kind, []))}")
    if errs:
        return errs
    ds = by_kind["DaemonSet"][0]
    errs += check_daemonset(ds, dra_defaults)
    errs += check_rbac(by_kind["ClusterRole"][0], calls)
    sa = by_kind["ServiceAccount"][0]["metadata"]
    if ds["spec"]["template"]["spec"].get("serviceAccountName") != sa["name"]:
        errs.append("the DaemonSet does not run as the chart's ServiceAccount")
    crb = by_kind["ClusterRoleBinding"][0]
    if crb["roleRef"] != {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                          "name": by_kind["ClusterRole"][0]["metadata"]["name"]}:
        errs.append("the ClusterRoleBinding does not bind the ClusterRole")
    if {"kind": "ServiceAccount", "name": sa["name"], "namespace": sa["namespace"]} not in crb["subjects"]:
        errs.append("the ClusterRoleBinding does not name the ServiceAccount")
    dc = by_kind["DeviceClass"][0]
    if dc["metadata"]["name"] != "dra.cpu" or dc["spec"]["selectors"] != [
            {"cel": {"expression": 'device.driver == "dra.cpu"'}}]:
        errs.append("DeviceClass is not dra.cpu selecting device.driver == \"dra.cpu\"")
    # ConfigMap <-> --config
    pod = ds["spec"]["template"]["spec"]
    cms = by_kind.get("ConfigMap", [])
    for c in pod["containers"]:
        if bool(cms) != ("config" in flag_args(c)):
            errs.append(f"{c['name']}: --config given {'without' if not cms else 'but no'} ConfigMap")
    for cm in cms:
        cfg = yaml.safe_load(cm["data"]["config.yaml"])
        if not isinstance(cfg, dict) or not cfg:
            errs.append("the ConfigMap's config.yaml is not a non-empty mapping")
        want = cm["metadata"]["name"]
        if not any(v.get("configMap", {}).get("name") == want for v in pod["volumes"]):
            errs.append(f"ConfigMap {want} is not mounted")
        if "checksum/config" not in ds["spec"]["template"]["metadata"].get("annotations", {}):
            errs.append("no checksum/config annotation: a config change would not roll the pods")
    return errs


def check_examples(path, objs, attributes):
    errs = []
    claims = {}
    templates = {}
    for o in objs:
        kind = o.get("kind")
        if kind in ("ResourceClaim", "ResourceClaimTemplate"):
            if o.get("apiVersion") != "resource.k8s.io/v1":
                errs.append(f"{kind} {o['metadata']['name']}: apiVersion is not resource.k8s.io/v1")
            spec = o["spec"]["spec"] if kind == "ResourceClaimTemplate" else o["spec"]
            (templates if kind == "ResourceClaimTemplate" else claims)[o["metadata"]["name"]] = spec
    for name, spec in {**claims, **templates}.items():
        devices = spec["devices"]
        reqs = {r["name"]: r for r in devices["requests"]}
        for rname, r in reqs.items():
            ex = r["exactly"]
            if ex["deviceClassName"] != "dra.cpu":
                continue
            q = ex.get("capacity", {}).get("requests", {}).get("dra.cpu/cpu")
            if q is None and "count" not in ex:
                errs.append(f"{name}/{rname}: neither a dra.cpu/cpu capacity request nor a count")
            if q is not None and not re.fullmatch(r"[1-9][0-9]*", str(q)):
                errs.append(f"{name}/{rname}: dra.cpu/cpu {q!r} is not a whole positive number of CPUs")
            for s in ex.get("selectors", []):
                for dom, attr in re.findall(r'device\.attributes\["([^"]+)"\]\.(\w+)', s["cel"]["expression"]):
                    if f"{dom}/{attr}" not in attributes:
                        errs.append(f"{name}/{rname}: selector uses {dom}/{attr}, not a published attribute")
        for c in devices.get("constraints", []):
            for rn in c.get("requests", []):
                if rn not in reqs:
                    errs.append(f"{name}: constraint names unknown request {rn}")
            attr = c.get("matchAttribute")
            cpu_reqs = [rn for rn in c.get("requests", []) if reqs[rn]["exactly"]["deviceClassName"] == "dra.cpu"]
            if cpu_reqs and attr not in attributes:
                errs.append(f"{name}: matchAttribute {attr} is not published by dra.cpu")
        for cfg in devices.get("config", []):
            op = cfg.get("opaque", {})
            if op.get("driver") != "dra.cpu":
                continue
            for rn in cfg.get("requests", []):
                if rn not in reqs:
                    errs.append(f"{name}: config names unknown request {rn}")
            p = op["parameters"]
            if p.get("apiVersion") != "v1alpha1":
                errs.append(f"{name}: opaque apiVersion is not v1alpha1")
            for k, v in p.items():
                if k == "cpuConfig":
                    if set(v) != {"cpuset"} or not isinstance(v["cpuset"], str):
                        errs.append(f"{name}: cpuConfig must be {{cpuset: <string>}}")
                elif k == "policy":
                    for pk, pv in v.items():
                        if pk not in POLICY_KEYS or not isinstance(pv, POLICY_KEYS[pk]):
                            errs.append(f"{name}: policy.{pk}: unknown key or wrong type")
                    if v.get("coreType", "any") not in ("performance", "efficiency", "any"):
                        errs.append(f"{name}: policy.coreType {v['coreType']!r}")
                elif k != "apiVersion":
                    errs.append(f"{name}: unknown opaque key {k}")
    for o in objs:
        if o.get("kind") != "Pod":
            continue
        pname = o["metadata"]["name"]
        pclaims = {}
        for rc in o["spec"].get("resourceClaims", []):
            ref = rc.get("resourceClaimTemplateName") or rc.get("resourceClaimName")
            pool = templates if "resourceClaimTemplateName" in rc else claims
            if ref not in pool:
                errs.append(f"pod {pname}: claim {ref} is not defined in {os.path.basename(path)}")
            pclaims[rc["name"]] = ref
        for c in o["spec"]["containers"]:
            for cl in c.get("resources", {}).get("claims", []):
                if cl["name"] not in pclaims:
                    errs.append(f"pod {pname}/{c['name']}: claim {cl['name']} not in spec.resourceClaims")
    return errs


def run_rendered_agent(objs, tmp, env):
    """Runs dracpu-dra-agent with a rendering's dra-agent args and ConfigMap; host paths are
    pointed into `tmp` in case start-up order ever changes. Returns the finished process."""
    ds = next(o for o in objs if o["kind"] == "DaemonSet")
    args = []
    for a in ds["spec"]["template"]["spec"]["containers"][0]["args"]:
        name = a.split("=", 1)[0]
        if name == "--config":
            cm = next(o for o in objs if o["kind"] == "ConfigMap")
            with open(os.path.join(tmp, "config.yaml"), "w") as f:
                f.write(cm["data"]["config.yaml"])
            a = "--config=" + os.path.join(tmp, "config.yaml")
        elif name in ("--shm-path", "--cdi-root", "--kubelet-root-dir"):
            a = f"{name}={tmp}/{name[2:]}"
        elif name == "--bind-address":
            a = "--bind-address=127.0.0.1:0"
        args.append(a)
    return subprocess.run([AGENT] + args, capture_output=True, text=True, env=env, timeout=30)


def published_attributes():
    with open(os.path.join(ROOT, "dra-agent", "devices", "device_catalog.cc")) as f:
        return set(re.findall(r'"((?:dra\.cpu|dra\.net|resource\.kubernetes\.io)/\w+)"', f.read()))


class DeployTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.defaults = dra_agent_help()
        cls.calls = api_calls()

    def test_agent_defaults_are_what_the_chart_assumes(self):
        d = self.defaults
        self.assertEqual(d["kubelet-root-dir"], "/var/lib/kubelet")
        self.assertEqual(d["cdi-root"], "/var/run/cdi")
        self.assertEqual(d["bind-address"], ":8080")
        self.assertRegex(d["shm-path"], r"^/run/dracpu/state\.v<MAJOR>\.shm$")

    def test_chart_version_is_the_agents(self):
        with open(os.path.join(HERE, "helm", "dracpu", "Chart.yaml")) as f:
            chart = yaml.safe_load(f)
        self.assertEqual(chart["apiVersion"], "v2")
        out = subprocess.run([AGENT, "version"], capture_output=True, text=True, check=True).stdout
        self.assertEqual(chart["appVersion"], "v" + out.split()[-1],
                         "Chart.yaml appVersion (the default image tag) is not the agents' version")

    def test_api_calls_are_listed(self):
        self.assertIn({"apiGroup": "resource.k8s.io", "resource": "resourceslices", "verb": "create",
                       "nonResourceURL": ""}, self.calls)
        self.assertGreaterEqual(len(self.calls), 5)

    def test_every_yaml_file_parses(self):
        files = yaml_files()
        self.assertGreater(len(files), 10)
        for p in files:
            with self.subTest(file=os.path.relpath(p, HERE)):
                docs = load_all(p)
                self.assertTrue(docs, "no document")

    def test_manifests_are_the_rendered_chart_defaults(self):
        proc = subprocess.run([sys.executable, os.path.join(HERE, "render.py"), "--service", "kubectl"],
                              capture_output=True, text=True, check=True)
        with open(os.path.join(HERE, "manifests", "dracpu.yaml")) as f:
            committed = f.read()
        header = "".join(l for l in committed.splitlines(True) if l.startswith("## "))
        self.assertEqual(committed, header + proc.stdout,
                         "deploy/manifests/dracpu.yaml is stale: run deploy/update-manifests.sh")

    def defaults_concrete(self):
        return dict(self.defaults, **{"shm-path": "/run/dracpu/state.v1.shm"})

    def test_manifest_invariants(self):
        objs = load_all(os.path.join(HERE, "manifests", "dracpu.yaml"))
        self.assertEqual(check_objects(objs, self.defaults_concrete(), self.calls), [])

    def test_chart_invariants_under_example_values(self):
        vfiles = sorted(f for f in os.listdir(os.path.join(HERE, "examples")) if f.startswith("values-"))
        self.assertGreaterEqual(len(vfiles), 3)
        overrides = [("defaults", {}),
                     ("serviceMonitor", {"metrics": {"serviceMonitor": {"enabled": True}}}),
                     ("sharedPoolUpdates only", {"sharedPoolUpdates": "never"})]
        for f in vfiles:
            with open(os.path.join(HERE, "examples", f)) as fh:
                overrides.append((f, yaml.safe_load(fh)))
        for label, ov in overrides:
            with self.subTest(values=label):
                objs = self.render_objs(ov)
                self.assertEqual(check_objects(objs, self.defaults_concrete(), self.calls), [])

    def test_the_agent_accepts_the_rendered_args_and_config(self):
        """Runs dracpu-dra-agent with each rendering's dra-agent args and config file: it must get
        past flag and config parsing (exit 2) and stop at the missing API server (exit 1).
        Host paths are pointed into a temp directory in case start-up order ever changes."""
        vfiles = sorted(f for f in os.listdir(os.path.join(HERE, "examples")) if f.startswith("values-"))
        overrides = [("defaults", {})]
        for f in vfiles:
            with open(os.path.join(HERE, "examples", f)) as fh:
                overrides.append((f, yaml.safe_load(fh)))
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
        env["NODE_NAME"] = "deploy-test"
        for label, ov in overrides:
            with self.subTest(values=label), tempfile.TemporaryDirectory() as tmp:
                objs = self.render_objs(ov)
                p = run_rendered_agent(objs, tmp, env)
                self.assertEqual(p.returncode, 1, p.stderr)
                self.assertIn("Kubernetes API", p.stderr)
                if "groupBy" in (ov.get("driverConfig") or {}):
                    self.assertIn("groupBy: " + ov["driverConfig"]["groupBy"], p.stderr)

    def render_objs(self, override):
        text = "---\n".join(t for _, t in render.render_chart(values_override=copy.deepcopy(override)))
        return [o for o in yaml.safe_load_all(text) if o]

    def test_default_image_is_what_make_image_tags(self):
        # deploy/image/build.sh tags localhost/dracpu:v<dracpu-dra-agent --version> (and checks
        # this same equality before it builds); the plain manifests are the same defaults.
        out = subprocess.run([AGENT, "--version"], capture_output=True, text=True, check=True).stdout
        tag = "localhost/dracpu:v" + out.split()[-1]
        for objs in (self.render_objs({}), load_all(os.path.join(HERE, "manifests", "dracpu.yaml"))):
            ds = next(o for o in objs if o["kind"] == "DaemonSet")
            images = [c["image"] for c in ds["spec"]["template"]["spec"]["containers"]]
            self.assertEqual(images, [tag, tag])
        with open(os.path.join(HERE, "image", "build.sh")) as f:
            self.assertIn("default_tag=localhost/dracpu:v$version", f.read())

    def test_values_reach_the_right_places(self):
        with open(os.path.join(HERE, "examples", "values-reference.yaml")) as f:
            objs = self.render_objs(yaml.safe_load(f))
        ds = next(o for o in objs if o["kind"] == "DaemonSet")
        dra = ds["spec"]["template"]["spec"]["containers"][0]
        args = flag_args(dra)
        self.assertEqual(args["v"], "5")
        self.assertNotIn("cpu-device-mode", args)  # folded into the file, as the reference chart
        self.assertEqual(args["expose-pcie-roots"], "true")
        self.assertEqual(args["kubelet-root-dir"], "/var/lib/k0s/kubelet")
        self.assertEqual(dra["image"], "localhost/dracpu:v0.1.0")
        self.assertEqual(ds["spec"]["template"]["spec"]["nodeSelector"], {"dracpu": "true"})
        cm = next(o for o in objs if o["kind"] == "ConfigMap")
        self.assertEqual(yaml.safe_load(cm["data"]["config.yaml"]),
                         {"publishNodeAllocatableResourceMapping": False, "cpuDeviceMode": "individual",
                          "reservedCPUs": "0"})
        # sharedPoolUpdates is laid over driverConfig
        objs = self.render_objs({"driverConfig": {"groupBy": "socket", "sharedPoolUpdates": "auto"},
                                 "sharedPoolUpdates": "never"})
        cm = next(o for o in objs if o["kind"] == "ConfigMap")
        self.assertEqual(yaml.safe_load(cm["data"]["config.yaml"]),
                         {"groupBy": "socket", "sharedPoolUpdates": "never"})
        kinds = [o["kind"] for o in self.render_objs({"metrics": {"serviceMonitor": {"enabled": True}}})]
        self.assertIn("ServiceMonitor", kinds)
        self.assertNotIn("ServiceMonitor", [o["kind"] for o in self.render_objs({})])
        self.assertNotIn("ClusterRole", [o["kind"] for o in self.render_objs({"rbac": {"create": False}})])
        notes = dict(render.render_chart(notes=True))["NOTES.txt"]
        self.assertIn("exec ds/dracpu -c dra-agent -- dracpu-shm dump", notes)

    def test_checks_catch_broken_manifests(self):
        """The checks above can fail: each mutation must be reported."""
        good = load_all(os.path.join(HERE, "manifests", "dracpu.yaml"))
        d = self.defaults_concrete()

        def ds(objs):
            return next(o for o in objs if o["kind"] == "DaemonSet")["spec"]["template"]["spec"]

        def role(objs):
            return next(o for o in objs if o["kind"] == "ClusterRole")

        def named(items, name):
            return next(i for i in items if i["name"] == name)

        mutations = {
            "one container": lambda o: ds(o)["containers"].pop(),
            "no shared pid ns": lambda o: ds(o).pop("shareProcessNamespace"),
            "privileged": lambda o: ds(o)["containers"][1]["securityContext"].update(privileged=True),
            "cap added": lambda o: ds(o)["containers"][0]["securityContext"]["capabilities"].update(add=["SYS_ADMIN"]),
            "no cdi mount": lambda o: ds(o)["containers"][0]["volumeMounts"].remove(
                named(ds(o)["containers"][0]["volumeMounts"], "cdi")),
            "nri dir moved": lambda o: named(ds(o)["volumes"], "nri")["hostPath"].update(path="/run/nri"),
            "sys writable": lambda o: named(ds(o)["containers"][1]["volumeMounts"], "sys").pop("readOnly"),
            "kubelet root writable": lambda o: named(ds(o)["containers"][0]["volumeMounts"],
                                                     "kubelet-root").pop("readOnly"),
            "verb missing": lambda o: role(o)["rules"][1]["verbs"].remove("watch"),
            "extra grant": lambda o: role(o)["rules"].append(
                {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}),
            "wrong probe": lambda o: ds(o)["containers"][1]["readinessProbe"]["httpGet"].update(path="/healthz"),
            "unknown flag": lambda o: ds(o)["containers"][0]["args"].append("--no-such-flag=1"),
            "maxSurge 1": lambda o: next(x for x in o if x["kind"] == "DaemonSet")["spec"]["updateStrategy"]
            ["rollingUpdate"].update(maxSurge=1),
        }
        for label, mutate in mutations.items():
            with self.subTest(mutation=label):
                objs = copy.deepcopy(good)
                mutate(objs)
                self.assertNotEqual(check_objects(objs, d, self.calls), [], label)
        bad_claim = load_all(os.path.join(HERE, "examples", "claim-numa.yaml"))
        bad_claim[0]["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"][0]["cel"][
            "expression"] = 'device.attributes["dra.cpu"].numaNode == 0'
        self.assertNotEqual(check_examples("x", bad_claim, published_attributes()), [])

    def test_every_value_and_flag_is_documented(self):
        with open(os.path.join(ROOT, "docs", "configuration.md")) as f:
            config_doc = f.read()
        with open(os.path.join(ROOT, "docs", "dra-agent.md")) as f:
            agent_doc = f.read()
        with open(os.path.join(HERE, "helm", "dracpu", "values.yaml")) as f:
            values = yaml.safe_load(f)

        def leaves(d, prefix=""):
            for k, v in d.items():
                path = prefix + k
                if isinstance(v, dict) and v and path not in ("resources",):
                    yield from leaves(v, path + ".")
                else:
                    yield path

        for key in leaves(values):
            with self.subTest(value=key):
                # "`args.groupBy`", or "`.labels`" for a sibling documented on its sibling's row
                last = key.rsplit(".", 1)[-1]
                self.assertTrue(f"`{key}`" in config_doc or f"`.{last}`" in config_doc,
                                f"values key {key} is not in docs/configuration.md")
        for flag in self.defaults:
            with self.subTest(flag=flag):
                self.assertTrue(f"`--{flag}" in agent_doc or f"`-{flag} " in agent_doc,
                                f"dra-agent flag --{flag} is not in docs/dra-agent.md")
        for flag in NRI_AGENT_FLAGS:
            with self.subTest(nri_flag=flag):
                self.assertTrue(f"`--{flag}" in config_doc or f"`-{flag} " in config_doc)

    def test_examples(self):
        attrs = published_attributes()
        self.assertIn("dra.cpu/coreID", attrs)
        files = [f for f in sorted(os.listdir(os.path.join(HERE, "examples"))) if f.startswith("claim-")]
        self.assertGreaterEqual(len(files), 6)
        for f in files:
            with self.subTest(example=f):
                p = os.path.join(HERE, "examples", f)
                objs = load_all(p)
                self.assertTrue(any(o["kind"] == "Pod" for o in objs))
                self.assertEqual(check_examples(p, objs, attrs), [])


def leaf_paths(d, prefix=""):
    """Dotted paths of a values mapping's keys, stopping at lists and at free-form maps."""
    for k, v in d.items():
        path = prefix + k
        if isinstance(v, dict) and v and path not in ("resources", "affinity", "nodeSelector", "driverConfig",
                                                      "podAnnotations", "podLabels",
                                                      "serviceAccount.annotations"):
            yield from leaf_paths(v, path + ".")
        else:
            yield path


def sysfs_overlay(sockets=2, cores=4):
    """A sysfs overlay in the reference's format: sockets x cores x SMT2, CPUs c and c+N siblings,
    one NUMA node and one L3 per socket."""
    n = sockets * cores
    lines = ['/sys/devices/system/cpu/online: "0-%d\\n"' % (2 * n - 1),
             '/sys/devices/system/cpu/smt/control: "on\\n"']
    for node in range(sockets):
        first = node * cores
        cpus = "%d-%d,%d-%d" % (first, first + cores - 1, n + first, n + first + cores - 1)
        lines.append('/sys/devices/system/node/node%d/cpulist: "%s\\n"' % (node, cpus))
    for cpu in range(2 * n):
        core = cpu % n
        socket = core // cores
        d = "/sys/devices/system/cpu/cpu%d" % cpu
        l3 = "%d-%d,%d-%d" % (socket * cores, socket * cores + cores - 1, n + socket * cores,
                              n + socket * cores + cores - 1)
        lines += ['%s/node%d: ""' % (d, socket),
                  '%s/topology/physical_package_id: "%d\\n"' % (d, socket),
                  '%s/topology/core_id: "%d\\n"' % (d, core % cores),
                  '%s/topology/thread_siblings_list: "%d,%d\\n"' % (d, core, core + n),
                  '%s/cache/index3/level: "3\\n"' % d,
                  '%s/cache/index3/id: "%d\\n"' % (d, socket),
                  '%s/cache/index3/shared_cpu_list: "%s\\n"' % (d, l3)]
    return "\n".join(lines) + "\n"


class ReferenceInputsTest(unittest.TestCase):
    """A Go user's values file and config file, unchanged (issue 16 item 1)."""

    @classmethod
    def setUpClass(cls):
        cls.defaults = dra_agent_help()
        cls.calls = api_calls()
        with open(os.path.join(HERE, "testdata", "reference-values.yaml")) as f:
            cls.values = yaml.safe_load(f)

    def render(self):
        text = "---\n".join(t for _, t in render.render_chart(values_override=copy.deepcopy(self.values)))
        return [o for o in yaml.safe_load_all(text) if o]

    def test_every_key_is_a_key_of_our_chart(self):
        with open(os.path.join(HERE, "helm", "dracpu", "values.yaml")) as f:
            ours = yaml.safe_load(f)
        for path in leaf_paths(self.values):
            with self.subTest(key=path):
                node = ours
                for part in path.split("."):
                    self.assertIsInstance(node, dict, path)
                    self.assertIn(part, node, f"{path} is not a value of our chart: it would be ignored")
                    node = node[part]

    def test_every_value_reaches_its_place(self):
        objs = self.render()
        self.assertEqual(check_objects(objs, dict(self.defaults, **{"shm-path": "/run/dracpu/state.v1.shm"}),
                                       self.calls), [])
        by_kind = {o["kind"]: o for o in objs}
        ds = by_kind["DaemonSet"]
        self.assertEqual(ds["metadata"]["name"], "dracpu")  # fullnameOverride
        pod = ds["spec"]["template"]["spec"]
        meta = ds["spec"]["template"]["metadata"]
        dra, nri = pod["containers"]
        for c in (dra, nri):
            self.assertEqual(c["image"], "localhost/dracpu:v0.1.0")
            self.assertEqual(c["imagePullPolicy"], "Always")
            self.assertEqual(c["resources"], self.values["resources"])
            self.assertIn({"name": "sysfs-overlay", "mountPath": "/etc/dra-driver-cpu/sysfs-overlay.yaml",
                           "subPath": "sysfs-overlay.yaml", "readOnly": True}, c["volumeMounts"])
        self.assertEqual(pod["imagePullSecrets"], [{"name": "regcred"}])
        self.assertEqual(pod["tolerations"], self.values["tolerations"])
        self.assertEqual(pod["nodeSelector"], {"dracpu": "true"})
        self.assertEqual(pod["affinity"], self.values["affinity"])
        self.assertIn({"name": "sysfs-overlay", "configMap": {"name": "dra-driver-cpu-sysfs-overlay"}},
                      pod["volumes"])
        self.assertEqual(meta["annotations"]["example.com/team"], "latency")
        self.assertIn("checksum/config", meta["annotations"])
        self.assertEqual(meta["labels"]["example.com/tier"], "node-agents")
        self.assertEqual(by_kind["ServiceAccount"]["metadata"]["annotations"], {"example.com/owner": "platform"})
        args = flag_args(dra)
        self.assertEqual(args["v"], "6")
        self.assertEqual(args["bind-address"], ":9180")
        self.assertEqual(args["expose-pcie-roots"], "true")
        self.assertEqual(args["kubelet-root-dir"], "/var/lib/k0s/kubelet")
        self.assertEqual(dra["ports"][0]["containerPort"], 9180)
        self.assertEqual(dra["livenessProbe"]["httpGet"]["path"], "/healthz")
        # The deprecated args.* are folded into the file and win over driverConfig, as the
        # reference chart does; nothing deprecated is passed as a flag.
        cfg = yaml.safe_load(by_kind["ConfigMap"]["data"]["config.yaml"])
        self.assertEqual(cfg, {"kubeconfig": "/etc/dracpu/kubeconfig-that-wins-over-in-cluster",
                               "cpuDeviceMode": "individual", "groupBy": "socket", "reservedCPUs": "0-1",
                               "hostnameOverride": "worker-7",
                               "sysfsOverlay": "/etc/dra-driver-cpu/sysfs-overlay.yaml",
                               "publishNodeAllocatableResourceMapping": True})
        for flag in ("cpu-device-mode", "group-by", "reserved-cpus", "hostname-override"):
            self.assertNotIn(flag, args)

    def test_the_agent_runs_with_the_rendered_args_and_config(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
        env["NODE_NAME"] = "spec-node-name"
        with tempfile.TemporaryDirectory() as tmp:
            p = run_rendered_agent(self.render(), tmp, env)
        # Past flags and config (2), stopped at the kubeconfig the file names (1).
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("kubeconfig-that-wins-over-in-cluster", p.stderr)
        self.assertIn("on node worker-7", p.stderr, "args.hostnameOverride wins over $NODE_NAME")
        for line in ("cpuDeviceMode: individual", "groupBy: socket", 'reservedCPUs: "0-1"',
                     'sysfsOverlay: "/etc/dra-driver-cpu/sysfs-overlay.yaml"',
                     "publishNodeAllocatableResourceMapping: true"):
            self.assertIn(line, p.stderr)
        self.assertNotIn("deprecated", p.stderr)

    def test_deprecated_flags_warn(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
        p = subprocess.run([AGENT, "--node-name=n", "--group-by=socket", "--sysfs-overlay=/nonexistent",
                            "--kubeconfig=/nonexistent"], capture_output=True, text=True, env=env, timeout=30)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("flag --group-by is deprecated", p.stderr)
        self.assertIn("flag --sysfs-overlay is deprecated", p.stderr)
        self.assertIn('(DEPRECATED: prefer driverConfig field "groupBy"',
                      subprocess.run([AGENT, "--help"], capture_output=True, text=True).stdout)

    def test_reference_config_file_publishes_for_its_node_and_topology(self):
        """The reference's config file with every key, against the apiserver simulator: the
        node is hostnameOverride's (over $NODE_NAME), the topology the sysfsOverlay's (over an
        empty sysfs root), grouped by socket without the reserved CPUs."""
        if not SIM_APISERVER:
            self.skipTest("no apiserver simulator given")
        with open(os.path.join(HERE, "testdata", "reference-config.yaml")) as f:
            text = f.read()
        with tempfile.TemporaryDirectory() as tmp:
            api = subprocess.Popen([SIM_APISERVER, "--port", "0", "--kubeconfig-out",
                                    os.path.join(tmp, "kubeconfig"), "--node", "worker-9=uid-w9"],
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            agent = None
            try:
                url = api.stdout.readline().strip()
                # The file as a Go user has it; only the kubeconfig path is this machine's.
                text = text.replace("/etc/kubernetes/dracpu.kubeconfig", os.path.join(tmp, "kubeconfig"))
                with open(os.path.join(tmp, "config.yaml"), "w") as f:
                    f.write(text)
                with open(os.path.join(tmp, "overlay.yaml"), "w") as f:
                    f.write(sysfs_overlay())
                os.makedirs(os.path.join(tmp, "empty-root"))
                env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
                env["NODE_NAME"] = "not-this-node"
                log = open(os.path.join(tmp, "agent.log"), "w")
                agent = subprocess.Popen(
                    [AGENT, "--config=config.yaml", "--sysfs-root=" + os.path.join(tmp, "empty-root"),
                     "--kubelet-root-dir=" + os.path.join(tmp, "k"), "--cdi-root=" + os.path.join(tmp, "cdi"),
                     "--shm-path=" + os.path.join(tmp, "shm", "state.shm"), "--bind-address=127.0.0.1:0"],
                    cwd=tmp, stdout=log, stderr=log, env=env)
                slices = []
                deadline = time.time() + 30
                while time.time() < deadline and not slices and agent.poll() is None:
                    with urllib.request.urlopen(url + "/apis/resource.k8s.io/v1/resourceslices", timeout=5) as r:
                        slices = json.loads(r.read())["items"]
                    time.sleep(0.1)
                with open(os.path.join(tmp, "agent.log")) as f:
                    logged = f.read()
                self.assertEqual(len(slices), 1, logged)
                spec = slices[0]["spec"]
                self.assertEqual(spec["nodeName"], "worker-9")
                self.assertEqual(spec["pool"]["name"], "worker-9")
                devices = {d["name"]: d for d in spec["devices"]}
                self.assertEqual(sorted(devices), ["cpudevsocket000", "cpudevsocket001"])
                # 8 CPUs per socket; reservedCPUs 0,8 (one core of socket 0) are not offered, and the
                # shared-pool floor (minSharedCPUs 1) comes off the first device.
                self.assertEqual(devices["cpudevsocket000"]["capacity"]["dra.cpu/cpu"]["value"], "5")
                self.assertEqual(devices["cpudevsocket001"]["capacity"]["dra.cpu/cpu"]["value"], "8")
                self.assertIn("publishNodeAllocatableResourceMapping: true", logged)
                self.assertIn("/overlay.yaml is read over", logged)
            finally:
                for proc in (agent, api):
                    if proc is not None and proc.poll() is None:
                        proc.kill()
                        proc.wait()


def read_unit(path):
    """{section: {key: [values]}} of a systemd unit file."""
    out, section = {}, None
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("["):
                section = out.setdefault(line.strip("[]"), {})
                continue
            k, _, v = line.partition("=")
            section.setdefault(k, []).append(v)
    return out


class SystemdTest(unittest.TestCase):
    UNITS = {"dracpu-dra-agent.service": "dracpu-dra-agent", "dracpu-nri-agent.service": "dracpu-nri-agent"}

    def test_units(self):
        for name, binary in self.UNITS.items():
            with self.subTest(unit=name):
                u = read_unit(os.path.join(HERE, "systemd", name))
                svc = u["Service"]
                self.assertEqual(svc["Type"], ["notify"])
                self.assertEqual(svc["NotifyAccess"], ["main"])
                self.assertTrue(svc["ExecStart"][0].startswith("/usr/local/bin/" + binary + " "))
                after = " ".join(u["Unit"]["After"]).split()
                self.assertIn("containerd.service", after)
                if binary == "dracpu-dra-agent":
                    self.assertIn("kubelet.service", after)
                self.assertEqual(svc["CapabilityBoundingSet"], [""])
                self.assertIn("/run/dracpu", " ".join(svc["ReadWritePaths"]).split())
                # WatchdogSec= only once the agent sends WATCHDOG=1 (else systemd kills it).
                if "WatchdogSec" in svc:
                    src_dir = os.path.join(ROOT, binary.removeprefix("dracpu-"))
                    sends = any("WATCHDOG=1" in open(os.path.join(d, f), errors="replace").read()
                                for d, _, fs in os.walk(src_dir) for f in fs if f.endswith(".cc"))
                    self.assertTrue(sends, f"{name} sets WatchdogSec but {binary} never sends WATCHDOG=1")

    @unittest.skipUnless(shutil.which("systemd-analyze"), "no systemd-analyze")
    def test_units_verify(self):
        with tempfile.TemporaryDirectory() as tmp:
            for name in self.UNITS:
                with open(os.path.join(HERE, "systemd", name)) as f:
                    text = re.sub(r"/usr/local/bin/dracpu-[a-z-]+", "/bin/true", f.read())
                with open(os.path.join(tmp, name), "w") as f:
                    f.write(text)
            p = subprocess.run(["systemd-analyze", "verify"] + [os.path.join(tmp, n) for n in self.UNITS],
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(p.stderr.strip(), "")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    AGENT = os.path.abspath(sys.argv.pop(1))
    if len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
        SIM_APISERVER = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=1)
