"""Shared scaffolding of the node_*_e2e.py scenarios (both real agents, whole_node.py).

    def run(ctx):
        node = ctx.node()                       # a started WholeNode on the Skylake-SP machine
        check(cond, "what")                     # prints "ok: what" or fails the scenario
    sys.exit(main(run, "node_xyz"))

main() skips (exit 77) without the corpus, prints the log tails of every node on a failure and
exits 1, prints the wall time on success. known_bug() records a check that fails because of an
agent bug not fixed yet: it prints "KNOWN BUG: ..." and does not fail.
"""
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from whole_node import WholeNode, cpulist, fmt  # noqa: E402,F401

MACHINE = "intel-skylake-sp-2s-ht-pci"  # 2 sockets = 2 NUMA nodes, HT: 0-7,16-23 / 8-15,24-31
NUMA = {0: cpulist("0-7,16-23"), 1: cpulist("8-15,24-31")}
ALL = cpulist("0-31")


def sibling(cpu):
    return (cpu + 16) % 32


class Fail(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Fail(what)
    print("ok:", what, flush=True)


def known_bug(cond, what):
    if cond:
        print("ok:", what, flush=True)
    else:
        print("KNOWN BUG:", what, flush=True)


def uid(n):
    return "e2e0%04x-0000-4000-8000-%012x" % (n >> 48, n & 0xffffffffffff)


def parse_metrics(text):
    """Prometheus text -> {'name{labels}': float} (labels as written by the agent)."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r"^(\S+)\s+(\S+)", line)
        if m:
            try:
                out[m.group(1)] = float(m.group(2))
            except ValueError:
                pass
    return out


class Ctx:
    def __init__(self, build, shared, prefix):
        self.build, self.shared, self.prefix = build, shared, prefix
        self.nodes = []

    def node(self, start=True, config=None, **kw):
        """A WholeNode on MACHINE; config: dra-agent config file text (--config)."""
        n = WholeNode(self.build, machine=kw.pop("machine", MACHINE), shared_dir=self.shared,
                      tmp_prefix=self.prefix, **kw)
        self.nodes.append(n)
        if config is not None:
            n.dra_agent_args += ["--config", n.write_file("config.yaml", config)]
        if start:
            n.start()
        return n


def main(run, name):
    build = sys.argv[1]
    shared = os.environ.get("DRACPU_SHARED_DIR", "")
    if not os.path.isdir(os.path.join(shared, "sysfs-corpus")):
        print("../shared (DRACPU_SHARED_DIR) is absent: %s skipped" % name)
        return 77
    ctx = Ctx(build, shared, "dracpu-%s-" % name.replace("_", "-"))
    t0 = time.time()
    try:
        run(ctx)
        print("%s: all checks passed in %.1f s" % (name, time.time() - t0))
        return 0
    except (Fail, OSError, RuntimeError, TimeoutError, KeyError, ValueError) as e:
        print("FAIL: %s: %s" % (type(e).__name__, e))
        for node in reversed(ctx.nodes):
            for log in ("nri-agent", "dra-agent", "runtime", "kubelet", "apiserver"):
                tail = node._log_tail(log, 3000)
                if tail:
                    print("--- %s (%s) log tail ---\n%s" % (log, node.tmp, tail))
        return 1
    finally:
        for node in ctx.nodes:
            node.cleanup()


def metric(text_or_dict, name, **labels):
    """Sum of the samples of `name` whose labels include `labels` (0.0 when none)."""
    m = parse_metrics(text_or_dict) if isinstance(text_or_dict, str) else text_or_dict
    total = 0.0
    for key, v in m.items():
        base, _, rest = key.partition("{")
        if base != name:
            continue
        if all('%s="%s"' % (k, val) in rest for k, val in labels.items()):
            total += v
    return total
