#!/usr/bin/env python3
"""Render the dracpu Helm chart without helm: a small interpreter for the subset of Go
templates + Sprig the chart uses. deploy/manifests/dracpu.yaml is this script's output for the
chart's default values, and `make test` (deploy/deploy_test.py) checks that they agree.

Supported: text with {{ }} actions and the {{- / -}} trim markers, comments, define / include,
if / else if / else, with / else, variables ($x := ..., $), field chains (.Values.a.b, $x.a),
parenthesised pipelines, string / number / bool literals, .Files.Get (a file of the chart, as
is), and the functions default, quote, toYaml, indent, nindent, trunc, trimSuffix, contains,
replace, printf (%s %d), dir, deepCopy, set, sha256sum, eq, ne, and, or, not, empty. Anything
else is an error, never silently ignored.

usage: render.py [--set key.path=value ...] [--values FILE] [--release NAME] [--namespace NS]
                 [--service NAME] [CHART_DIR]   (prints the manifests to stdout)
"""
import argparse
import copy
import hashlib
import json
import os
import posixpath
import re
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CHART = os.path.join(HERE, "helm", "dracpu")


class TemplateError(Exception):
    pass


# ---------------------------------------------------------------- lexing
ACTION = re.compile(r"\{\{(-\s)?(.*?)(\s-)?\}\}", re.S)


def lex(text, name):
    """Splits text into ("text", s) and ("action", s) tokens, applying the trim markers."""
    tokens = []
    pos = 0
    for m in ACTION.finditer(text):
        chunk = text[pos:m.start()]
        if m.group(1):
            chunk = chunk.rstrip(" \t\r\n")
        tokens.append(["text", chunk])
        tokens.append(["action", m.group(2).strip(), bool(m.group(3))])
        pos = m.end()
    tokens.append(["text", text[pos:]])
    # apply right trims
    out = []
    trim_next = False
    for t in tokens:
        if t[0] == "text":
            s = t[1].lstrip(" \t\r\n") if trim_next else t[1]
            trim_next = False
            if s:
                out.append(("text", s))
        else:
            trim_next = t[2]
            if not (t[1].startswith("/*") and t[1].endswith("*/")):
                out.append(("action", t[1]))
    return out


# ---------------------------------------------------------------- parsing
def parse(tokens, name):
    """Returns (body, defines). body: list of nodes."""
    defines = {}
    pos = 0

    def block(stop):
        nonlocal pos
        nodes = []
        while pos < len(tokens):
            kind, s = tokens[pos]
            if kind == "text":
                nodes.append(("text", s))
                pos += 1
                continue
            word = s.split(None, 1)[0] if s else ""
            if word in stop or (word == "else" and "else" in stop):
                return nodes, s
            pos += 1
            if word in ("if", "with"):
                cond = s[len(word):].strip()
                branches = []
                body, end = block(("else", "end"))
                branches.append((cond, body))
                else_body = []
                while end.startswith("else"):
                    pos += 1
                    rest = end[4:].strip()
                    if rest.startswith("if ") and word == "if":
                        body, end = block(("else", "end"))
                        branches.append((rest[3:].strip(), body))
                    elif rest:
                        raise TemplateError(f"{name}: unsupported {end!r}")
                    else:
                        else_body, end = block(("end",))
                pos += 1  # end
                nodes.append((word, branches, else_body))
            elif word == "define":
                dname = json.loads(s[6:].strip())
                body, _ = block(("end",))
                pos += 1
                defines[dname] = body
            elif word in ("range", "template", "block", "break", "continue"):
                raise TemplateError(f"{name}: {word!r} is not supported by deploy/render.py")
            elif word == "end":
                raise TemplateError(f"{name}: unexpected end")
            else:
                nodes.append(("action", s))
        if stop:
            raise TemplateError(f"{name}: missing {{{{ end }}}}")
        return nodes, None

    body, _ = block(())
    return body, defines


TOKEN = re.compile(r'\s*(?:(\()|(\))|(\|)|("(?:[^"\\]|\\.)*")|(:=|=)|([^\s()|]+))')


def tokenize_expr(s):
    toks = []
    pos = 0
    s = s.rstrip()
    while pos < len(s):
        m = TOKEN.match(s, pos)
        if not m or m.end() == pos:
            raise TemplateError(f"cannot parse {s!r}")
        pos = m.end()
        if m.group(1):
            toks.append("(")
        elif m.group(2):
            toks.append(")")
        elif m.group(3):
            toks.append("|")
        elif m.group(4):
            toks.append(("str", json.loads(m.group(4))))
        elif m.group(5):
            toks.append(m.group(5))
        else:
            toks.append(m.group(6))
    return toks


# ---------------------------------------------------------------- evaluation
def truthy(v):
    if v is None or v is False:
        return False
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return v != 0
    if isinstance(v, (str, list, dict)):
        return len(v) > 0
    return True


def to_yaml(v):
    if v is None:
        return "null"
    return yaml.safe_dump(v, default_flow_style=False, sort_keys=True).rstrip("\n").removesuffix("\n...")


def go_str(v):
    if v is None:
        return "<no value>"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, (dict, list)):
        raise TemplateError(f"printing a {type(v).__name__} directly; use toYaml")
    return str(v)


def indent(n, s):
    pad = " " * n
    return "\n".join(pad + line for line in s.split("\n"))


def go_printf(fmt, *args):
    args = list(args)

    def sub(m):
        if m.group(0) == "%%":
            return "%"
        return go_str(args.pop(0))

    return re.sub(r"%[sdv%]", sub, fmt)


class Renderer:
    def __init__(self, defines):
        self.defines = defines
        self.funcs = {
            "default": lambda d, v=None: v if truthy(v) else d,
            "quote": lambda v: json.dumps(go_str(v)),
            "toYaml": to_yaml,
            "indent": lambda n, s: indent(n, s),
            "nindent": lambda n, s: "\n" + indent(n, s),
            "trunc": lambda n, s: s[:n],
            "trimSuffix": lambda suf, s: s[: -len(suf)] if suf and s.endswith(suf) else s,
            "contains": lambda sub, s: sub in s,
            "replace": lambda old, new, s: s.replace(old, new),
            "printf": go_printf,
            "dir": lambda p: posixpath.dirname(p) or ".",
            "deepCopy": copy.deepcopy,
            "set": self._set,
            "sha256sum": lambda s: hashlib.sha256(s.encode()).hexdigest(),
            "eq": lambda a, b: a == b,
            "ne": lambda a, b: a != b,
            "not": lambda v: not truthy(v),
            "and": lambda *a: next((v for v in a if not truthy(v)), a[-1]),
            "or": lambda *a: next((v for v in a if truthy(v)), a[-1]),
            "empty": lambda v: not truthy(v),
        }

    @staticmethod
    def _set(d, k, v):
        d[k] = v
        return d

    def render(self, nodes, dot, scope):
        out = []
        for node in nodes:
            kind = node[0]
            if kind == "text":
                out.append(node[1])
            elif kind == "action":
                v = self.eval_action(node[1], dot, scope)
                if v is not None:
                    out.append(v)
            else:  # if / with
                _, branches, else_body = node
                for cond, body in branches:
                    val = self.eval_pipeline(tokenize_expr(cond), dot, scope)
                    if truthy(val):
                        out.append(self.render(body, val if kind == "with" else dot, scope))
                        break
                else:
                    out.append(self.render(else_body, dot, scope))
        return "".join(out)

    def eval_action(self, s, dot, scope):
        toks = tokenize_expr(s)
        if len(toks) >= 2 and toks[1] in (":=", "=") and isinstance(toks[0], str) and toks[0].startswith("$"):
            scope[toks[0]] = self.eval_pipeline(toks[2:], dot, scope)
            return None
        return go_str(self.eval_pipeline(toks, dot, scope))

    def eval_pipeline(self, toks, dot, scope):
        # split on top-level |
        cmds, cur, depth = [], [], 0
        for t in toks:
            if t == "(":
                depth += 1
            elif t == ")":
                depth -= 1
            if t == "|" and depth == 0:
                cmds.append(cur)
                cur = []
            else:
                cur.append(t)
        cmds.append(cur)
        val, have = None, False
        for cmd in cmds:
            val = self.eval_command(cmd, dot, scope, (val,) if have else ())
            have = True
        return val

    def eval_command(self, toks, dot, scope, piped):
        operands = []
        i = 0
        while i < len(toks):
            t = toks[i]
            if t == "(":
                depth, j = 1, i + 1
                while depth:
                    if toks[j] == "(":
                        depth += 1
                    elif toks[j] == ")":
                        depth -= 1
                    j += 1
                operands.append(("value", self.eval_pipeline(toks[i + 1:j - 1], dot, scope)))
                i = j
                continue
            operands.append(("tok", t))
            i += 1
        if not operands:
            raise TemplateError("empty command")
        head = operands[0]
        if head[0] == "tok" and isinstance(head[1], str) and (head[1] in self.funcs or head[1] == "include"):
            args = [self.operand(o, dot, scope) for o in operands[1:]] + list(piped)
            if head[1] == "include":
                name, data = args
                if name not in self.defines:
                    raise TemplateError(f"include of undefined template {name!r}")
                return self.render(self.defines[name], data, {"$": data})
            try:
                return self.funcs[head[1]](*args)
            except TypeError as e:
                raise TemplateError(f"{head[1]}: {e}") from None
        if head[0] == "tok" and isinstance(head[1], str) and head[1].startswith("."):
            method = self.operand(head, dot, scope)
            if callable(method):  # .Files.Get "path"
                return method(*[self.operand(o, dot, scope) for o in operands[1:]], *piped)
        if len(operands) != 1 or piped:
            raise TemplateError(f"unknown function in {toks!r}")
        return self.operand(head, dot, scope)

    def operand(self, o, dot, scope):
        if o[0] == "value":
            return o[1]
        t = o[1]
        if isinstance(t, tuple):
            return t[1]
        if t in ("true", "false"):
            return t == "true"
        if t == "nil":
            return None
        if re.fullmatch(r"-?\d+", t):
            return int(t)
        if t == ".":
            return dot
        if t.startswith("$"):
            name, _, path = t.partition(".")
            if name not in scope:
                raise TemplateError(f"undefined variable {name}")
            return self.field(scope[name], path)
        if t.startswith("."):
            return self.field(dot, t[1:])
        raise TemplateError(f"unknown function or operand {t!r}")

    @staticmethod
    def field(v, path):
        for part in filter(None, path.split(".")):
            if v is None:
                return None
            if not isinstance(v, dict):
                raise TemplateError(f"field {part} of a non-map")
            v = v.get(part)
        return v


def deep_merge(base, over):
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            deep_merge(base[k], v)
        else:
            base[k] = v
    return base


def render_chart(chart_dir=DEFAULT_CHART, values_override=None, release="dracpu",
                 namespace="kube-system", service="Helm", notes=False):
    """Returns [(template file name, rendered text)] in file-name order, helpers excluded.
    NOTES.txt is rendered too (so its template errors show) and returned as ("NOTES.txt", text)
    only when notes=True."""
    with open(os.path.join(chart_dir, "Chart.yaml")) as f:
        chart = yaml.safe_load(f)
    with open(os.path.join(chart_dir, "values.yaml")) as f:
        values = yaml.safe_load(f) or {}
    deep_merge(values, values_override or {})
    tdir = os.path.join(chart_dir, "templates")
    files = sorted(os.listdir(tdir))
    defines, bodies = {}, []
    for name in files:
        with open(os.path.join(tdir, name)) as f:
            body, d = parse(lex(f.read(), name), name)
        defines.update(d)
        if not name.startswith("_"):
            bodies.append((name, body))
    def files_get(path):
        full = os.path.normpath(os.path.join(chart_dir, path))
        if not full.startswith(os.path.normpath(chart_dir) + os.sep) or not os.path.isfile(full):
            raise TemplateError(f".Files.Get: no file {path!r} in the chart")
        with open(full) as f:
            return f.read()

    root = {
        "Files": {"Get": files_get},
        "Values": values,
        "Chart": {"Name": chart["name"], "Version": chart["version"], "AppVersion": chart["appVersion"]},
        "Release": {"Name": release, "Namespace": namespace, "Service": service},
    }
    r = Renderer(defines)
    out = [(name, r.render(body, root, {"$": root})) for name, body in bodies]
    return [(n, t) for n, t in out if notes or n != "NOTES.txt"]


def parse_set(expr):
    key, _, raw = expr.partition("=")
    value = yaml.safe_load(raw) if raw else ""
    out = cur = {}
    parts = key.split(".")
    for p in parts[:-1]:
        cur = cur.setdefault(p, {})
    cur[parts[-1]] = value
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("chart", nargs="?", default=DEFAULT_CHART)
    ap.add_argument("--values", action="append", default=[])
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--release", default="dracpu")
    ap.add_argument("--namespace", default="kube-system")
    ap.add_argument("--service", default="Helm", help="the app.kubernetes.io/managed-by label")
    a = ap.parse_args()
    override = {}
    for v in a.values:
        with open(v) as f:
            deep_merge(override, yaml.safe_load(f) or {})
    for s in a.set:
        deep_merge(override, parse_set(s))
    docs = []
    for name, text in render_chart(a.chart, override, a.release, a.namespace, a.service):
        text = text.strip("\n")
        if text.strip():
            docs.append(f"# Source: dracpu/templates/{name}\n{text}\n")
    sys.stdout.write("---\n".join(docs))


if __name__ == "__main__":
    try:
        main()
    except TemplateError as e:
        sys.exit(f"render.py: {e}")
