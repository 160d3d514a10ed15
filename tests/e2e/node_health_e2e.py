#!/usr/bin/env python3
"""Device health on a whole node (both real agents, whole_node.py; docs/dra-agent.md "Health"):

  * with both agents up, the kubelet's health stream reports every device Healthy with a 30 s
    timeout;
  * the nri-agent (which enforces exclusivity) SIGKILLed: once its shared-memory heartbeat is
    older than 30 s every device turns Unhealthy with a message saying so;
  * the nri-agent restarted: every device Healthy again, and a claim prepared meanwhile gets its
    container pinned;
  * the dra-agent restarted: the new health stream starts Healthy.

Usage: node_health_e2e.py BUILD_DIR   (env DRACPU_SHARED_DIR). Exit 77 = skipped.
"""
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from node_common import check, cpulist, fmt, main, uid  # noqa: E402

DEVICES = ["cpudevnuma000", "cpudevnuma001"]


def health_of(node):
    return {d["device"]: d for d in node.health(1)[0]}


def run(ctx):
    node = ctx.node()
    h = health_of(node)
    check(sorted(h) == DEVICES and all(d["health"] == "Healthy" and d["timeoutSeconds"] == 30
                                       for d in h.values()),
          "health stream: both devices Healthy, timeout 30 s")

    node.kill_nri_agent(signal.SIGKILL)
    check(True, "nri-agent SIGKILLed")
    h = node.wait_for(lambda: (lambda h: h if all(d["health"] == "Unhealthy" for d in h.values()) else None)(
        health_of(node)), "every device Unhealthy after 30 s without a heartbeat", timeout=60)
    msg = h["cpudevnuma000"]["message"]
    check("nri-agent" in msg, "both devices Unhealthy: %s" % msg)

    A = uid(0xa)
    node.add_claim(A, "cpudevnuma001", 2)
    check(node.prepare(A)[A]["error"] == "", "a claim prepared while the nri-agent is down")
    node.start_nri_agent()
    node.wait_for(lambda: all(d["health"] == "Healthy" for d in health_of(node).values()),
                  "both devices Healthy again", timeout=30)
    check(True, "nri-agent restarted: both devices Healthy again")
    ca = node.claim_cpus(A)
    r = node.create("ca", "sb-a", claim_uids=[A])
    check(r["ok"] and cpulist(r["cpus"]) == ca, "the claim's container pinned to %s" % fmt(ca))

    node.kill_dra_agent(signal.SIGKILL)
    node.start_dra_agent()
    h = health_of(node)
    check(sorted(h) == DEVICES and all(d["health"] == "Healthy" for d in h.values()),
          "dra-agent restarted: its health stream reports both devices Healthy")
    check(node.claim_cpus(A) == ca and node.containers()["ca"]["cpus"] == ca, "the claim and its container unchanged")


if __name__ == "__main__":
    sys.exit(main(run, "node_health_e2e"))
