#!/usr/bin/env python3
"""SIGKILL of the dra-agent during Prepares, many rounds (issue 6, crash safety).

Each round: the kubelet simulator sends Prepares for a few fresh claims while the agent is killed
with SIGKILL after a random delay; the agent is restarted; then every claim whose Prepare was
acknowledged must hold exactly the CPUs it was acknowledged with (the CDI spec and shared memory
agree), no CPU may be held by two claims, and `dracpu-shm verify` must pass. The round's claims
are then unprepared. Seeded (DRACPU_CRASH_SEED), so a failure can be replayed.

Usage: dra_agent_crash_e2e.py BUILD_DIR [ROUNDS]   (env DRACPU_SHARED_DIR). Exit 77 = skipped.
"""
import json
import os
import random
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dra_agent_e2e import Node, Fail, claim, cpulist, spec_cpus, http_post  # noqa: E402


def main():
    build = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    shared = os.environ.get("DRACPU_SHARED_DIR", "")
    if not os.path.isdir(os.path.join(shared, "sysfs-corpus")):
        print("../shared (DRACPU_SHARED_DIR) is absent: crash test skipped")
        return 77
    seed = int(os.environ.get("DRACPU_CRASH_SEED", "20261129"))
    rng = random.Random(seed)
    node = Node(build, shared)
    acked_total = 0
    try:
        node.start_agent()
        for r in range(rounds):
            uids = ["cafe%04d-0000-4000-8000-%012d" % (r, i) for i in range(4)]
            for i, uid in enumerate(uids):
                http_post(node.url + "/_sim/resourceclaims",
                          claim(uid, "cpudevnuma%03d" % (i % 2), str(rng.choice([1, 2, 3, 4]))))
            session = subprocess.Popen(
                [os.path.join(build, "tests/sim/kubelet/dracpu-sim-kubelet"), "--registry-dir",
                 os.path.join(node.kubelet, "plugins_registry"), "session"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            for uid in uids:
                session.stdin.write("prepare default/claim-%s/%s\n" % (uid, uid))
            session.stdin.flush()
            # Kill once the first Prepare is answered, while the others are in flight.
            lines = [session.stdout.readline()]
            time.sleep(rng.uniform(0.0, 0.005))
            node.agent.kill()
            node.agent.wait()
            session.stdin.close()
            lines += session.stdout.read().splitlines()
            lines = [l for l in lines if l.strip()]
            session.wait()
            acked = {}
            for line in lines:
                out = json.loads(line)
                for uid in uids:
                    if uid in out and out[uid].get("error") == "":
                        acked[uid] = spec_cpus(node, uid)
                        if acked[uid] is None:
                            raise Fail("round %d: %s acknowledged without a CDI spec" % (r, uid))
            acked_total += len(acked)
            node.start_agent()
            rc, _ = node.kubelet_cmd("register")
            if rc != 0:
                raise Fail("round %d: the restarted agent did not register" % r)
            held = {}
            for c in node.shm_dump()["claims"]:
                cpus = cpulist(c["cpus"])
                for other, theirs in held.items():
                    if cpus & theirs:
                        raise Fail("round %d: claims %s and %s share CPUs %s" % (r, c["uid"], other, cpus & theirs))
                held[c["uid"]] = cpus
            for uid, cpus in acked.items():
                if held.get(uid) != cpus:
                    raise Fail("round %d: acknowledged %s had CPUs %s, after restart %s" % (r, uid, cpus, held.get(uid)))
                rc, out = node.kubelet_cmd("prepare", "default/claim-%s/%s" % (uid, uid))
                if rc != 0 or spec_cpus(node, uid) != cpus:
                    raise Fail("round %d: re-Prepare of %s changed its CPUs or failed: %s" % (r, uid, out))
            verify = node.shm_verify()
            if verify.returncode != 0:
                raise Fail("round %d: dracpu-shm verify: %s" % (r, verify.stdout + verify.stderr))
            refs = ["default/claim-%s/%s" % (u, u) for u in uids]
            rc, out = node.kubelet_cmd("unprepare", *refs)
            if rc != 0:
                raise Fail("round %d: unprepare failed: %s" % (r, out))
        print("ok: %d rounds of SIGKILL during Prepare (seed %d): %d acknowledged claims kept their CPUs, "
              "no CPU held twice, verify passed every round" % (rounds, seed, acked_total))
        return 0
    except Fail as e:
        print("FAIL (seed %d):" % seed, e)
        log = os.path.join(node.tmp, "agent.log")
        if os.path.exists(log):
            print("--- agent log (tail) ---\n" + open(log).read()[-4000:])
        return 1
    finally:
        node.cleanup()


if __name__ == "__main__":
    sys.exit(main())
