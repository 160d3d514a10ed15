#!/usr/bin/env python3
"""make test: the chart's Grafana dashboard and PrometheusRule alerts (both off by default) render,
are well formed, and every query and alert expression names only metrics, and labels, that the
two agents really export: the list comes from the /metrics exposition of a real dra-agent and
nri-agent run here on a small synthetic node (tests/e2e/whole_node.py), after a claim was
prepared and containers created so that labelled series exist. A renamed metric or label fails
this test. Each alert also has its runbook section in docs/operations.md.

usage: monitoring_test.py BUILD_DIR [unittest args]
"""
import json
import os
import re
import sys
import tempfile
import unittest

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
import render  # noqa: E402
from synthetic_sysfs import write_tree  # noqa: E402
from whole_node import WholeNode  # noqa: E402

BUILD = None
ON = {"metrics": {"serviceMonitor": {"enabled": True}, "dashboard": {"enabled": True},
                  "prometheusRule": {"enabled": True}}}
# Labels Prometheus adds to every scraped series (the chart's ServiceMonitor adds `node`).
TARGET_LABELS = {"node", "instance", "job", "namespace", "pod", "container", "endpoint", "service"}
AGGREGATIONS = {"sum", "min", "max", "avg", "count", "group", "stddev", "stdvar", "topk", "bottomk",
                "quantile", "count_values"}
FUNCTIONS = {"rate", "irate", "increase", "delta", "histogram_quantile", "clamp_min", "clamp_max",
             "absent", "max_over_time", "min_over_time", "avg_over_time", "label_values", "time",
             "vector", "abs", "changes", "resets"}
KEYWORDS = {"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring",
            "group_left", "group_right"}
TOKEN = re.compile(r'\s*("(?:[^"\\]|\\.)*"|\[[^\]]*\]|[A-Za-z_:][A-Za-z0-9_:]*|'
                   r'\d+(?:\.\d+)?(?:e[+-]?\d+)?|==|!=|=~|!~|<=|>=|[-+*/%^<>=(){},])')


def exposition(text):
    """{family: {"type": t, "labels": set}} from a Prometheus text exposition."""
    fams = {}
    for line in text.splitlines():
        m = re.match(r"# TYPE (\S+) (\S+)", line)
        if m:
            fams[m.group(1)] = {"type": m.group(2), "labels": set()}
            continue
        if not line or line.startswith("#"):
            continue
        m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})?", line)
        name = m.group(1)
        for fam, info in fams.items():
            if name == fam or (info["type"] == "histogram" and name in (fam + "_bucket", fam + "_sum", fam + "_count")):
                info["labels"] |= set(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="', m.group(3) or ""))
    return fams


def series_names(fams):
    """{series name: labels it may carry} for every family (histograms: _bucket/_sum/_count)."""
    out = {}
    for fam, info in fams.items():
        if info["type"] == "histogram":
            out[fam + "_bucket"] = info["labels"] | {"le"}
            out[fam + "_sum"] = out[fam + "_count"] = set(info["labels"])
        else:
            out[fam] = set(info["labels"])
    return out


def promql_refs(expr):
    """([(metric, {labels matched})], {labels grouped by}) of a PromQL expression; raises
    ValueError on a token it does not know or unbalanced brackets."""
    toks, pos = [], 0
    expr = expr.strip()
    while pos < len(expr):
        m = TOKEN.match(expr, pos)
        if not m or m.end() == pos:
            raise ValueError("cannot read %r at %d" % (expr, pos))
        toks.append(m.group(1))
        pos = m.end()
    depth = {"(": 0, "{": 0}
    for t in toks:
        if t in "({":
            depth[t] += 1
        elif t in ")}":
            depth["(" if t == ")" else "{"] -= 1
            if min(depth.values()) < 0:
                raise ValueError("unbalanced %r" % expr)
    if any(depth.values()):
        raise ValueError("unbalanced %r" % expr)
    metrics, grouped, i = [], set(), 0
    while i < len(toks):
        t = toks[i]
        nxt = toks[i + 1] if i + 1 < len(toks) else None
        if re.fullmatch(r"[A-Za-z_:][A-Za-z0-9_:]*", t):
            if t in ("by", "without", "on", "ignoring", "group_left", "group_right") and nxt == "(":
                j = toks.index(")", i)
                grouped |= {x for x in toks[i + 2:j] if x != ","}
                i = j + 1
                continue
            if t in KEYWORDS:
                i += 1
                continue
            if nxt == "(" or (t in AGGREGATIONS and nxt in ("by", "without")):
                if t not in AGGREGATIONS and t not in FUNCTIONS:
                    raise ValueError("unknown function %s in %r" % (t, expr))
                i += 1
                continue
            labels = set()
            if nxt == "{":
                j = toks.index("}", i)
                inner = toks[i + 2:j]
                for k in range(0, len(inner), 4):
                    labels.add(inner[k])
                i = j
            metrics.append((t, labels))
        i += 1
    return metrics, grouped


def grafana_expr(expr):
    """A dashboard query with Grafana's variables as PromQL would see them."""
    return expr.replace("$__rate_interval", "5m").replace("$__interval", "1m")


class Monitoring(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="dracpu-monitoring-")
        write_tree(cls.tmp.name, sockets=1, cores_per_socket=4, threads=2, l3_per_socket=1)
        node = WholeNode(BUILD, sysfs_root=cls.tmp.name, log=lambda _: None)
        try:
            node.start()
            uid = "cccccccc-0000-4000-8000-00000000000c"
            node.add_claim(uid, sorted(node.devices())[0], 2)
            cls.prepared = node.prepare(uid)[uid]
            node.create("web", "pod-web")
            with open(os.path.join(node.cdi_dir, "dra.k8s.io-cpu_claim-%s.json" % uid)) as f:
                env = json.load(f)["devices"][0]["containerEdits"]["env"][0]
            node.create("app", "pod-app", env=[env])
            cls.dra = exposition(node.metrics("dra"))
            cls.nri = exposition(node.metrics("nri"))
        finally:
            node.cleanup()
        cls.exported = series_names(cls.dra)
        cls.exported.update(series_names(cls.nri))
        cls.objects = [d for _, t in render.render_chart(values_override=ON)
                       for d in yaml.safe_load_all(t) if d]
        with open(os.path.join(ROOT, "docs", "operations.md")) as f:
            cls.operations = f.read()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def of_kind(self, kind):
        return [o for o in self.objects if o["kind"] == kind]

    def check_expr(self, expr, where):
        metrics, grouped = promql_refs(expr)
        self.assertTrue(metrics, "%s: %r names no metric" % (where, expr))
        allowed = set(TARGET_LABELS)
        for name, labels in metrics:
            self.assertIn(name, self.exported, "%s: %r names %s, which neither agent exports "
                          "(exported: %s)" % (where, expr, name, sorted(self.exported)))
            allowed |= self.exported[name]
            unknown = labels - self.exported[name] - TARGET_LABELS
            self.assertFalse(unknown, "%s: %s has no label %s" % (where, name, sorted(unknown)))
        self.assertFalse(grouped - allowed, "%s: %r groups by labels no metric has: %s"
                         % (where, expr, sorted(grouped - allowed)))

    def test_the_agents_ran(self):
        self.assertEqual(self.prepared["error"], "")
        self.assertIn("dra_cpu_prepare_claims_total", self.dra)
        self.assertIn("dracpu_nri_requests_total", self.nri)
        self.assertIn("method", self.nri["dracpu_nri_requests_total"]["labels"])

    def test_off_by_default(self):
        kinds = [d["kind"] for _, t in render.render_chart() for d in yaml.safe_load_all(t) if d]
        self.assertNotIn("PrometheusRule", kinds)
        self.assertNotIn("ServiceMonitor", kinds)
        for _, t in render.render_chart():
            self.assertNotIn("grafana_dashboard", t)

    def test_dashboard_configmap(self):
        maps = [o for o in self.of_kind("ConfigMap") if "grafana_dashboard" in o["metadata"]["labels"]]
        self.assertEqual(len(maps), 1)
        cm = maps[0]
        self.assertEqual(cm["metadata"]["labels"]["grafana_dashboard"], "1")
        self.assertEqual(list(cm["data"]), ["dracpu.json"])
        dash = json.loads(cm["data"]["dracpu.json"])
        with open(os.path.join(HERE, "helm", "dracpu", "dashboards", "dracpu.json")) as f:
            self.assertEqual(dash, json.load(f))
        self.assertEqual(dash["uid"], "dracpu-node")
        titles = [p["title"] for p in dash["panels"]]
        self.assertEqual(len(titles), len(set(titles)), "duplicate panel titles")
        for want in ("CPUs per node: claimed, shared pool, reserved", "Prepare and Unprepare latency",
                     "NRI hook latency p99, by method", "Errors", "ResourceSlices: published, sync errors",
                     "Devices by health"):
            self.assertIn(want, titles)
        ids = [p["id"] for p in dash["panels"]]
        self.assertEqual(len(ids), len(set(ids)))
        queries = 0
        for p in dash["panels"]:
            g = p["gridPos"]
            self.assertLessEqual(g["x"] + g["w"], 24, p["title"])
            for t in p.get("targets", []):
                self.check_expr(grafana_expr(t["expr"]), "panel %r" % p["title"])
                self.assertEqual(t["datasource"]["uid"], "${datasource}")
                queries += 1
        self.assertGreaterEqual(queries, 20)
        for var in dash["templating"]["list"]:
            if var["type"] == "query":
                q = var["query"]["query"]
                inner = re.fullmatch(r"label_values\((\w+), (\w+)\)", q)
                self.assertTrue(inner, q)
                self.check_expr(inner.group(1), "variable " + var["name"])

    def test_alerts(self):
        rules = self.of_kind("PrometheusRule")
        self.assertEqual(len(rules), 1)
        alerts = [r for g in rules[0]["spec"]["groups"] for r in g["rules"]]
        names = [a["alert"] for a in alerts]
        self.assertEqual(names, ["DracpuNriAgentNotConnected", "DracpuResourceSlicesNotPublished",
                                 "DracpuSharedPoolAtFloor", "DracpuPrepareErrors",
                                 "DracpuDeviceUnhealthy", "DracpuKubeletCpuManagerConflict"])
        section = self.operations.split("\n## Alerts\n", 1)
        self.assertEqual(len(section), 2, "docs/operations.md has no '## Alerts' section")
        runbooks = re.findall(r"^### (Dracpu\w+)$", section[1].split("\n## ", 1)[0], re.M)
        self.assertEqual(sorted(runbooks), sorted(names), "runbook sections vs alerts")
        for a in alerts:
            self.check_expr(a["expr"], "alert " + a["alert"])
            self.assertRegex(a["for"], r"^\d+[smh]$")
            self.assertIn(a["labels"]["severity"], ("warning", "critical"))
            for k in ("summary", "description", "runbook_url"):
                self.assertTrue(a["annotations"].get(k), "%s: no %s" % (a["alert"], k))
            self.assertTrue(a["annotations"]["runbook_url"].endswith("#" + a["alert"].lower()))
            self.assertNotIn("RUNBOOK_BASE_URL", a["annotations"]["runbook_url"])

    def test_runbook_base_url_is_a_value(self):
        over = json.loads(json.dumps(ON))
        over["metrics"]["prometheusRule"]["runbookBaseUrl"] = "https://example.org/ops.md"
        objs = [d for _, t in render.render_chart(values_override=over) for d in yaml.safe_load_all(t) if d]
        rule = [o for o in objs if o["kind"] == "PrometheusRule"][0]
        url = rule["spec"]["groups"][0]["rules"][0]["annotations"]["runbook_url"]
        self.assertEqual(url, "https://example.org/ops.md#dracpunriagentnotconnected")

    def test_service_monitor_adds_the_node_label(self):
        sm = self.of_kind("ServiceMonitor")[0]
        for ep in sm["spec"]["endpoints"]:
            self.assertIn({"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node"},
                          ep["relabelings"])

    def test_the_checker_catches_renames(self):
        # The checks themselves: a renamed metric, an unknown label, an unknown function fail.
        with self.assertRaises(AssertionError):
            self.check_expr('sum(dra_cpu_claim_allocated_cpus_renamed)', "self-test")
        with self.assertRaises(AssertionError):
            self.check_expr('sum(dra_cpu_prepare_claims_total{outcome="error"})', "self-test")
        with self.assertRaises(AssertionError):
            self.check_expr('sum by (claim) (dra_cpu_prepare_claims_total)', "self-test")
        with self.assertRaises(ValueError):
            promql_refs("sum(rate(dra_cpu_prepare_claims_total[5m])")
        with self.assertRaises(ValueError):
            promql_refs("frobnicate(dra_cpu_prepare_claims_total)")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    BUILD = os.path.abspath(sys.argv.pop(1))
    unittest.main()
