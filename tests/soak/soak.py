#!/usr/bin/env python3
"""Fault-injection soak: a seeded random walk on one whole node (issue 8, point 3).

Both real agents run on a recorded machine of ../shared/sysfs-corpus (default
intel-skylake-sp-2s-ht-pci; --machine NAME, or --sysfs-root DIR for any tree) under
tests/e2e/whole_node.py. random.Random(seed) picks each step from the kinds that apply to the
current model (see KINDS); the same seed and step count replay the same walk (a crash_* step
kills an agent at a delay drawn from the seed, but whether the call had finished is up to the
machine, and a crash_create's container may or may not exist afterwards).

The soak plays the scheduler and the kubelet: a claim is only allocated on a device while the
claims on it fit the device's published capacity (so a Prepare within it must succeed, except a
full-core claim when the group has too few whole free cores); a claim is unprepared only when no
container of it runs (the kubelet unprepares once the pod's containers have terminated; they may
still exist, stopped); a claim's container restarts (same pod uid and name, new id) only after
the previous one stopped.

After every step (docs/soak.md):
  * dracpu-shm verify passes (its shared-pool invariant once the nri-agent has caught up);
  * the claims table holds exactly the acknowledged claims, state prepared, with the CPUs Prepare
    returned, and each has its CDI spec naming those CPUs; a refused Prepare leaves neither;
  * the runtime holds exactly the model's containers, in the model's states;
  * no CPU is in two running exclusive containers, every running exclusive container's cpuset is
    its claim's CPUs, and no running shared container is on a CPU of a running exclusive one;
  * once the agents settle (a bounded wait on the runtime's state, never a blind sleep): every
    running shared container's cpuset holds the shared pool (allocatable minus the model's
    claims) and beyond it only CPUs of claims whose container does not run (the lazy shrink),
    the nri-agent's published pool is that pool, and the containers table matches the runtime.
A failure prints the seed, the step number and the step, the recent history and the agents'
log tails, and exits 1. The end prints one summary line.

Usage: soak.py BUILD_DIR [--seed S] [--steps N] [--machine NAME | --sysfs-root DIR]
               [--progress N] [-v]
Exit 0 passed, 1 failed, 77 skipped (no ../shared corpus: DRACPU_SHARED_DIR).
"""
import argparse
import collections
import json
import os
import random
import signal
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from whole_node import MODERN_RUNTIME, WholeNode, cpulist, fmt  # noqa: E402

DEFAULT_MACHINE = "intel-skylake-sp-2s-ht-pci"
SETTLE_TIMEOUT = 20.0  # seconds the agents get to converge after a step
MAX_CONTAINERS = 40    # running + stopped, so a Synchronize stays small
MAX_SHARED_RUNNING = 10

# kind: weight. Restarts are rarer: each costs a process start.
KINDS = {
    "prepare": 14,          # add a claim (random device, size, sometimes full cores) and prepare it
    "reprepare": 4,         # prepare an acknowledged claim again: the same CPUs
    "create_exclusive": 12, # a prepared claim's container (or its restart after a stop)
    "create_shared": 8,     # a container without claims
    "update": 4,            # the runtime updates a container's cpuset: the agent re-asserts ours
    "stop": 9,
    "remove": 8,            # a stopped container
    "unprepare": 10,        # a claim none of whose containers runs
    "refused": 2,           # creations the nri-agent must refuse: a second pod on a bound claim,
                            # the env of an unprepared claim
    "overcommit": 1,        # a Prepare beyond the group's free CPUs must fail and leave nothing
    "kill_dra": 1,          # SIGKILL the dra-agent, start it again
    "kill_nri": 1,          # SIGKILL the nri-agent, start it again
    "restart_runtime": 1,   # the runtime drops the plugin and listens again
    "outage_dra": 1,        # SIGKILL the dra-agent, 1-4 container steps without it, start it
    "outage_nri": 1,        # SIGKILL the nri-agent, 1-4 steps the runtime runs unpinned, start it
    "crash_prepare": 1,     # SIGKILL the dra-agent while a Prepare is (perhaps) in flight
    "crash_unprepare": 1,   # ... while an Unprepare is
    "crash_create": 1,      # SIGKILL the nri-agent while a CreateContainer is
}
# The steps an outage may contain: what still works, or must be repaired, without that agent.
OUTAGE_KINDS = {
    "outage_dra": ("create_exclusive", "create_shared", "update", "stop", "remove", "refused"),
    "outage_nri": ("prepare", "reprepare", "unprepare", "create_exclusive", "create_shared",
                   "update", "stop", "remove"),
}


class Fail(Exception):
    pass


class Claim:
    def __init__(self, uid, device, count, full_core):
        self.uid, self.device, self.count, self.full_core = uid, device, count, full_core
        self.cpus = None  # set once Prepare acknowledged it

    def __repr__(self):
        return "%s(%s x%d%s%s)" % (self.uid[-4:], self.device, self.count,
                                   " full-core" if self.full_core else "",
                                   " cpus=" + fmt(self.cpus) if self.cpus else "")


class Container:
    def __init__(self, cid, pod, pod_uid, name, claim=None):
        self.cid, self.pod, self.pod_uid, self.name, self.claim = cid, pod, pod_uid, name, claim
        self.state = "running"


class Soak:
    def __init__(self, node, seed, verbose=False, widen=True, expected=None):
        self.node = node
        # The corpus machine's expected.json (NUMA nodes and cores as hwloc saw them), else None:
        # read from the sysfs tree.
        self.expected = expected
        # widen: the runtime allows unsolicited updates, so running shared containers follow the
        # pool by themselves. Without (--runtime legacy) they get it when the nri-agent answers
        # an event: every CreateContainer, UpdateContainer and StopContainer reply carries the
        # updates of all running shared containers, and so does a Synchronize. self.synced names
        # what was just brought to the pool: "all", or a set of container ids. Either way a
        # shared container may keep the CPUs of a prepared claim whose container does not run
        # (the lazy shrink: the claim's container creation moves it off them).
        self.widen = widen
        self.synced = set()
        self.seed = seed
        self.rng = random.Random(seed)
        self.verbose = verbose
        self.claims = {}      # uid -> Claim, acknowledged by Prepare
        self.containers = {}  # cid -> Container, as the runtime has them
        self.counter = 0
        self.history = collections.deque(maxlen=12)
        self.counts = collections.Counter()
        self.step = 0
        self.devices = {}     # name -> {"capacity": int, "cpus": set}
        self.threads_per_core = 1
        self.cores = []       # list of sibling sets
        self.outage = None    # "outage_dra" / "outage_nri" while that agent is down

    # --- node facts --------------------------------------------------------------------------

    def learn_node(self):
        """Devices and capacities from the published ResourceSlice, groups and cores from sysfs."""
        def slices():
            with urllib.request.urlopen(self.node.api_url + "/apis/resource.k8s.io/v1/resourceslices",
                                        timeout=5) as r:
                return json.loads(r.read())["items"]
        items = self.node.wait_for(slices, "the dra-agent's ResourceSlice")
        cpu_root = os.path.join(self.node.sysfs_root, "sys", "devices", "system")
        numa = {}
        if self.expected:
            numa = {n["os_index"]: cpulist(n["cpus"]) for n in self.expected["numa_nodes"]}
        for s in items:
            for d in s["spec"]["devices"]:
                cap = d.get("capacity", {}).get("dra.cpu/cpu", {}).get("value")
                numa_id = d.get("attributes", {}).get("dra.cpu/numaNodeID", {}).get("int")
                if cap is None or numa_id is None:
                    continue
                # A node hwloc merged away (intel-harpertown-2s-buggy-numa): sysfs's word.
                cpus = numa.get(numa_id) or self.numa_cpus(cpu_root, numa_id)
                self.devices[d["name"]] = {"capacity": int(cap), "cpus": cpus or set()}
        if not self.devices:
            raise Fail("no grouped NUMA devices with capacity in the ResourceSlice: %s" % items)
        if self.expected:
            self.cores = [frozenset(cpulist(c["cpus"])) for c in self.expected["cores"]]
        else:
            seen = set()
            for cpu in sorted(self.allocatable()):
                path = os.path.join(cpu_root, "cpu", "cpu%d" % cpu, "topology",
                                    "thread_siblings_list")
                try:
                    with open(path) as f:
                        sib = frozenset(cpulist(f.read().strip("\0\n ")))
                except OSError:
                    sib = frozenset([cpu])  # unknown: no full-core claims are judged wrongly
                if sib not in seen:
                    seen.add(sib)
                    self.cores.append(sib)
        self.threads_per_core = max(len(c) for c in self.cores)

    @staticmethod
    def numa_cpus(root, numa):
        """node/nodeN/cpulist, or (trees recorded without node/) the CPUs with a nodeN link, or
        (no NUMA information at all: one node 0) every CPU."""
        try:
            with open(os.path.join(root, "node", "node%d" % numa, "cpulist")) as f:
                return cpulist(f.read())
        except OSError:
            pass
        cpu_dir = os.path.join(root, "cpu")
        cpus = {int(n[3:]): os.listdir(os.path.join(cpu_dir, n)) for n in os.listdir(cpu_dir)
                if n.startswith("cpu") and n[3:].isdigit()}
        if not any(e.startswith("node") for entries in cpus.values() for e in entries):
            return set(cpus) if numa == 0 else set()
        return {c for c, entries in cpus.items() if "node%d" % numa in entries}

    def allocatable(self):
        return cpulist(self.node.shm_dump()["cpus"]["allocatable"])

    def held(self):
        out = set()
        for c in self.claims.values():
            out |= c.cpus
        return out

    def expected_pool(self, dump):
        return cpulist(dump["cpus"]["allocatable"]) - self.held()

    def lazy(self):
        """CPUs of prepared claims whose container does not run: running shared containers may
        keep them until that container is created."""
        busy = {c.claim for c in self.running(True)}
        out = set()
        for uid, c in self.claims.items():
            if uid not in busy:
                out |= c.cpus
        return out

    def device_used(self, device):
        return sum(c.count for c in self.claims.values() if c.device == device)

    def uid(self):
        self.counter += 1
        return "%08x-5a0c-4000-8000-%012x" % (self.seed & 0xffffffff, self.counter)

    def running(self, exclusive=None):
        return [c for c in self.containers.values() if c.state == "running" and
                (exclusive is None or bool(c.claim) == exclusive)]

    # --- steps -------------------------------------------------------------------------------

    def eligible(self):
        k = {}
        n = len(self.containers)
        free_dev = [d for d, v in self.devices.items() if self.device_used(d) < v["capacity"]]
        if free_dev:
            k["prepare"] = KINDS["prepare"]
            k["crash_prepare"] = KINDS["crash_prepare"]
        if self.claims:
            k["reprepare"] = KINDS["reprepare"]
        if n < MAX_CONTAINERS and self._claims_for_container():
            k["create_exclusive"] = KINDS["create_exclusive"]
        if n < MAX_CONTAINERS and len(self.running(False)) < MAX_SHARED_RUNNING:
            k["create_shared"] = KINDS["create_shared"]
        if self.running():
            k["update"] = KINDS["update"]
            k["stop"] = KINDS["stop"]
        if any(c.state == "stopped" for c in self.containers.values()):
            k["remove"] = KINDS["remove"]
        if self._claims_to_unprepare():
            k["unprepare"] = KINDS["unprepare"]
            k["crash_unprepare"] = KINDS["crash_unprepare"]
        if n < MAX_CONTAINERS:
            k["refused"] = KINDS["refused"]
            k["crash_create"] = KINDS["crash_create"]
        k["overcommit"] = KINDS["overcommit"]
        for kind in ("kill_dra", "kill_nri", "restart_runtime", "outage_dra", "outage_nri"):
            k[kind] = KINDS[kind]
        if self.outage:
            k = {n: w for n, w in k.items() if n in OUTAGE_KINDS[self.outage]}
        return k

    def _claims_for_container(self):
        """Prepared claims with no running container: a first container or a restart."""
        busy = {c.claim for c in self.running(True)}
        return [u for u in self.claims if u not in busy]

    def _claims_to_unprepare(self):
        busy = {c.claim for c in self.running(True)}
        return [u for u in self.claims if u not in busy]

    def pick(self, seq):
        return self.rng.choice(sorted(seq))

    def do_step(self):
        kinds = self.eligible()
        names = sorted(kinds)
        kind = self.rng.choices(names, weights=[kinds[n] for n in names])[0]
        self.counts[kind] += 1
        return kind, getattr(self, "step_" + kind)()

    def _outage(self, kind, kill, start, agent):
        """SIGKILLs `agent`, runs 1-4 steps of OUTAGE_KINDS[kind] (each recorded and checked as
        far as it can be without the agent), then starts it again."""
        kill(signal.SIGKILL)
        self.outage = kind
        n = self.rng.randint(1, 4)
        self.history[-1] = "%d: SIGKILL %s for %d steps" % (self.step, agent, n)
        for i in range(1, n + 1):
            if not self.eligible():
                break
            self.history.append("%d.%d: (starting)" % (self.step, i))
            _, desc = self.do_step()
            self.history[-1] = "%d.%d: %s" % (self.step, i, desc)
            if self.verbose:
                print(self.history[-1], flush=True)
            self.check()
        self.history.append("%d: (starting %s)" % (self.step, agent))
        start()
        self.outage = None
        if kind == "outage_nri":
            self.synced = "all"
        return "%s back after %d steps" % (agent, n)

    def step_outage_dra(self):
        return self._outage("outage_dra", self.node.kill_dra_agent, self.node.start_dra_agent,
                           "dra-agent")

    def step_outage_nri(self):
        return self._outage("outage_nri", self.node.kill_nri_agent, self.node.start_nri_agent,
                           "nri-agent")

    def new_claim(self):
        """A claim the scheduler could allocate now, added to the apiserver."""
        free_dev = [d for d, v in self.devices.items() if self.device_used(d) < v["capacity"]]
        device = self.pick(free_dev)
        room = self.devices[device]["capacity"] - self.device_used(device)
        full_core = self.threads_per_core > 1 and self.rng.random() < 0.25
        count = self.rng.choice([1, 1, 2, 2, 3, 4, 4, 6, 8])
        if full_core:
            t = self.threads_per_core
            count = max(t, (count + t - 1) // t * t)
            if count > room:
                count = room // t * t
            if count == 0:
                full_core, count = False, self.rng.randint(1, room)
        count = min(count, room)
        claim = Claim(self.uid(), device, count, full_core)
        config = []
        if full_core:
            config = [{"source": "FromClaim", "requests": ["cpus"],
                       "opaque": {"driver": "dra.cpu", "parameters": {
                           "apiVersion": "v1alpha1", "policy": {"fullPCPUsOnly": True}}}}]
        # What the group can give now, for the verdict on a failure.
        free = self.devices[device]["cpus"] & self.allocatable() - self.held()
        whole = sum(len(c) for c in self.cores if c <= free)
        self.node.add_claim(claim.uid, device, count, config=config)
        desc = "prepare %r (group free %d, whole-core free %d)" % (claim, len(free), whole)
        return claim, free, whole, desc

    def step_prepare(self):
        claim, free, whole, desc = self.new_claim()
        return self.prepared(claim, self.node.prepare(claim.uid)[claim.uid], free, whole, desc)

    def prepared(self, claim, r, free, whole, desc):
        """Judges Prepare's answer `r` for a new claim and records an acknowledged one."""
        full_core, count = claim.full_core, claim.count
        if r["error"]:
            feasible = count <= (whole if full_core else len(free))
            if feasible:
                raise Fail("%s: refused although the group can hold it: %s" % (desc, r["error"]))
            self.expect_absent(claim.uid, desc)
            return desc + " -> refused as expected: " + r["error"]
        cpus = self.node.claim_cpus(claim.uid)
        if cpus is None or len(cpus) != count:
            raise Fail("%s: acknowledged but shared memory holds %s" % (desc, cpus))
        if not cpus <= free:
            raise Fail("%s: CPUs %s outside the group's free CPUs %s" % (desc, fmt(cpus), fmt(free)))
        if full_core and any(c & cpus and not c <= cpus for c in self.cores):
            raise Fail("%s: CPUs %s split a core" % (desc, fmt(cpus)))
        claim.cpus = cpus
        self.claims[claim.uid] = claim
        return desc + " -> " + fmt(cpus)

    def _in_flight(self, call, agent):
        """Runs call() in a thread and SIGKILLs `agent` alone after a random 0-4 or 0-20 ms, while the
        call is (perhaps) in flight; returns call()'s result, or the exception it raised."""
        out = {}

        def run():
            try:
                out["r"] = call()
            except (RuntimeError, OSError) as e:
                out["r"] = e
        t = threading.Thread(target=run)
        delay = self.rng.uniform(0, self.rng.choice([0.004, 0.02]))
        t.start()
        time.sleep(delay)  # the fault's timing, drawn from the seed; nothing waits on it
        self.node._stop(agent, signal.SIGKILL)
        t.join(60)
        if t.is_alive():
            raise Fail("a call to the %s did not return after its SIGKILL" % agent)
        return out["r"], delay

    def step_crash_prepare(self):
        claim, free, whole, desc = self.new_claim()
        r, delay = self._in_flight(lambda: self.node.prepare(claim.uid)[claim.uid], "dra-agent")
        acked = isinstance(r, dict) and not r["error"]
        cpus = self.node.claim_cpus(claim.uid) if acked else None
        self.node.start_dra_agent()  # and a new kubelet session, as after any dra-agent restart
        desc = "%s, dra-agent SIGKILLed after %.1f ms: %s" % (
            desc, delay * 1000, "acknowledged " + fmt(cpus or set()) if acked else "no answer")
        if acked:
            desc = self.prepared(claim, r, free, whole, desc)
            if claim.cpus != cpus:
                raise Fail("%s: the restarted dra-agent holds it on %s" % (desc, fmt(claim.cpus)))
            return desc
        # The kubelet retries: a claim that fits must be prepared now.
        return self.prepared(claim, self.node.prepare(claim.uid)[claim.uid], free, whole,
                             desc + ", retried")

    def step_crash_unprepare(self):
        claim = self.claims[self.pick(self._claims_to_unprepare())]
        r, delay = self._in_flight(lambda: self.node.unprepare(claim.uid)[claim.uid], "dra-agent")
        acked = isinstance(r, dict) and not r["error"]
        self.node.start_dra_agent()
        desc = "unprepare %r, dra-agent SIGKILLed after %.1f ms: %s" % (
            claim, delay * 1000, "acknowledged" if acked else "no answer, retried")
        if not acked:
            r = self.node.unprepare(claim.uid)[claim.uid]
            if r["error"]:
                raise Fail("%s: the retry failed: %s" % (desc, r["error"]))
        del self.claims[claim.uid]
        self.expect_absent(claim.uid, desc)
        return desc

    def step_crash_create(self):
        shared = not self._claims_for_container() or self.rng.random() < 0.4
        if shared:
            c = self._new_container()
            call = lambda: self._create(c)  # noqa: E731
        else:
            uid = self.pick(self._claims_for_container())
            prev = [x for x in self.containers.values() if x.claim == uid]
            c = self._new_container(uid, restart_of=self.rng.choice(prev) if prev else None)
            call = lambda: self._create(c, claim_uids=[uid])  # noqa: E731
        r, delay = self._in_flight(call, "nri-agent")
        self.node.start_nri_agent()
        self.synced = "all"
        exists = c.cid in self.node.containers()
        if exists:
            self.containers[c.cid] = c
        return "create %s %s, nri-agent SIGKILLed after %.1f ms: %s, %s" % (
            "shared" if shared else "exclusive", c.cid, delay * 1000,
            ("ok " + r["cpus"] if r["ok"] else "error " + r.get("error", "")[:60])
            if isinstance(r, dict) else repr(r), "created" if exists else "not created")

    def step_reprepare(self):
        claim = self.claims[self.pick(self.claims)]
        r = self.node.prepare(claim.uid)[claim.uid]
        if r["error"]:
            raise Fail("re-prepare of %r failed: %s" % (claim, r["error"]))
        cpus = self.node.claim_cpus(claim.uid)
        if cpus != claim.cpus:
            raise Fail("re-prepare of %r moved it to %s" % (claim, fmt(cpus or set())))
        return "re-prepare %r" % claim

    def _new_container(self, claim_uid=None, restart_of=None):
        self.counter += 1
        cid = "c%05d" % self.counter
        if restart_of:
            return Container(cid, restart_of.pod, restart_of.pod_uid, restart_of.name, claim_uid)
        pod = ("px%05d" if claim_uid else "ps%05d") % self.counter
        return Container(cid, pod, "uid-" + pod, "app", claim_uid)

    def _create(self, c, env=(), claim_uids=()):
        return self.node.create(c.cid, c.pod, env=env, claim_uids=claim_uids, pod_uid=c.pod_uid,
                                name=c.name)

    def step_create_exclusive(self):
        uid = self.pick(self._claims_for_container())
        prev = [c for c in self.containers.values() if c.claim == uid]
        c = self._new_container(uid, restart_of=self.rng.choice(prev) if prev else None)
        desc = "create %s (pod %s/%s) on %r%s" % (c.cid, c.pod, c.name, self.claims[uid],
                                                  " (restart)" if prev else "")
        r = self._create(c, claim_uids=[uid])
        if not r["ok"]:
            raise Fail("%s: refused: %s" % (desc, r.get("error")))
        if self.outage != "outage_nri":
            self.synced = "all"
        if self.outage == "outage_nri":
            desc += " -> unpinned (%s)" % (r["cpus"] or "all")
        elif cpulist(r["cpus"]) != self.claims[uid].cpus:
            raise Fail("%s: pinned to %s" % (desc, r["cpus"]))
        self.containers[c.cid] = c
        return desc

    def step_create_shared(self):
        c = self._new_container()
        r = self._create(c)
        pool = self.expected_pool(self.node.shm_dump())
        if not r["ok"]:
            raise Fail("create shared %s: refused: %s" % (c.cid, r.get("error")))
        if self.outage != "outage_nri" and cpulist(r["cpus"]) != pool:
            raise Fail("create shared %s: got %s, the pool is %s" % (c.cid, r["cpus"], fmt(pool)))
        self.containers[c.cid] = c
        self.mark_all()
        return "create shared %s -> %s" % (c.cid, r["cpus"])

    def step_update(self):
        c = self.containers[self.pick(x.cid for x in self.running())]
        alloc = sorted(self.allocatable())
        ask = set(self.rng.sample(alloc, self.rng.randint(1, len(alloc))))
        r = self.node.update(c.cid, ask)
        if not r["ok"]:
            raise Fail("update %s to %s: %s" % (c.cid, fmt(ask), r.get("error")))
        self.mark_all()
        return "update %s (%s) asking %s" % (c.cid, "exclusive" if c.claim else "shared", fmt(ask))

    def step_stop(self):
        c = self.containers[self.pick(x.cid for x in self.running())]
        r = self.node.stop(c.cid)
        if not r["ok"]:
            raise Fail("stop %s: %s" % (c.cid, r.get("error")))
        c.state = "stopped"
        self.mark_all()
        return "stop %s%s" % (c.cid, " (claim %s)" % c.claim[-4:] if c.claim else "")

    def step_remove(self):
        c = self.containers[self.pick(x.cid for x in self.containers.values() if x.state == "stopped")]
        r = self.node.remove(c.cid)
        if not r["ok"]:
            raise Fail("remove %s: %s" % (c.cid, r.get("error")))
        del self.containers[c.cid]
        return "remove %s" % c.cid

    def step_unprepare(self):
        claim = self.claims[self.pick(self._claims_to_unprepare())]
        r = self.node.unprepare(claim.uid)[claim.uid]
        if r["error"]:
            raise Fail("unprepare %r: %s" % (claim, r["error"]))
        del self.claims[claim.uid]
        self.expect_absent(claim.uid, "unprepare %r" % claim)
        return "unprepare %r" % claim

    def step_refused(self):
        busy = self.running(True)
        c = self._new_container()
        if busy and self.rng.random() < 0.6:
            holder = self.rng.choice(sorted(busy, key=lambda x: x.cid))
            desc = "second pod %s on %s's claim %s" % (c.pod, holder.cid, holder.claim[-4:])
            r = self._create(c, claim_uids=[holder.claim])
        else:
            uid = self.uid()  # never prepared (or long unprepared: the same to the agent)
            cpus = self.rng.sample(sorted(self.allocatable()), 2)
            desc = "pod %s with the env of unprepared claim %s" % (c.pod, uid[-4:])
            r = self._create(c, env=["DRA_CPUSET_%s=%s" % (uid, fmt(set(cpus)))])
        if r["ok"]:
            raise Fail("%s: accepted (cpus %s), must be refused" % (desc, r.get("cpus")))
        return desc + " -> refused: " + r.get("error", "")[:80]

    def step_overcommit(self):
        device = self.pick(self.devices)
        free = self.devices[device]["cpus"] & self.allocatable() - self.held()
        claim = Claim(self.uid(), device, len(free) + 1, False)
        self.node.add_claim(claim.uid, device, claim.count)
        r = self.node.prepare(claim.uid)[claim.uid]
        desc = "overcommit %r (group free %d)" % (claim, len(free))
        if not r["error"]:
            raise Fail(desc + ": acknowledged, must be refused")
        self.expect_absent(claim.uid, desc)
        return desc + " -> refused"

    def step_kill_dra(self):
        self.node.kill_dra_agent(signal.SIGKILL)
        self.node.start_dra_agent()
        return "SIGKILL + restart dra-agent"

    def mark(self, cid):
        if self.synced != "all":
            self.synced.add(cid)

    def mark_all(self):
        """The nri-agent answered an event: its reply settled every running shared container."""
        if self.outage != "outage_nri":
            self.synced = "all"

    def step_kill_nri(self):
        self.node.kill_nri_agent(signal.SIGKILL)
        self.node.start_nri_agent()
        self.synced = "all"
        return "SIGKILL + restart nri-agent"

    def step_restart_runtime(self):
        self.node.restart_runtime()
        self.synced = "all"
        return "runtime restart"

    # --- checks ------------------------------------------------------------------------------

    def cdi_path(self, uid):
        return os.path.join(self.node.cdi_dir, "dra.k8s.io-cpu_claim-%s.json" % uid)

    def cdi_cpus(self, uid):
        """The CPUs the claim's CDI spec hands the container (DRA_CPUSET_<uid>), or None."""
        try:
            with open(self.cdi_path(uid)) as f:
                spec = json.load(f)
        except (OSError, ValueError):
            return None
        prefix = "DRA_CPUSET_%s=" % uid
        for d in spec.get("devices", []):
            for e in d.get("containerEdits", {}).get("env", []):
                if e.startswith(prefix):
                    return cpulist(e[len(prefix):])
        return None

    def expect_absent(self, uid, desc):
        if self.node.claim_cpus(uid) is not None:
            raise Fail("%s: claim still in shared memory" % desc)
        if os.path.exists(self.cdi_path(uid)):
            raise Fail("%s: CDI spec left behind" % desc)

    def verify(self):
        """dracpu-shm verify's violations, but the pool's: the shared-pool record is the
        nri-agent's, so it catches up with a Prepare or Unprepare asynchronously (and not at all
        while the nri-agent is down); check() waits for it to settle instead."""
        ok, text = self.node.shm_verify()
        if ok:
            return [], []
        lines = [ln.strip() for ln in text.splitlines() if ln.startswith("  ")]
        if not lines:
            return [text], []
        pool = [ln for ln in lines if ln.startswith("shared pool is ")]
        return [ln for ln in lines if ln not in pool], pool

    def check(self):
        bad, _ = self.verify()
        if bad:
            raise Fail("dracpu-shm verify: " + "; ".join(bad))
        dump = self.node.shm_dump()
        shm_claims = {c["uid"]: c for c in dump["claims"]}
        for uid, claim in self.claims.items():
            c = shm_claims.get(uid)
            if c is None:
                raise Fail("acknowledged claim %r lost from shared memory" % claim)
            if cpulist(c["cpus"]) != claim.cpus or c["state"] != "prepared":
                raise Fail("claim %r is %s %s in shared memory" % (claim, c["state"], c["cpus"]))
            if self.cdi_cpus(uid) != claim.cpus:
                raise Fail("claim %r: its CDI spec names %s" % (claim, self.cdi_cpus(uid)))
        extra = set(shm_claims) - set(self.claims)
        if extra:
            raise Fail("shared memory holds claims nobody holds: %s" %
                       [(u, shm_claims[u]["state"], shm_claims[u]["cpus"]) for u in sorted(extra)])

        live = self.node.containers()
        if set(live) != set(self.containers):
            raise Fail("runtime containers %s, model %s" % (sorted(live), sorted(self.containers)))
        for cid, c in sorted(self.containers.items()):
            if live[cid]["state"] != c.state:
                raise Fail("%s is %s in the runtime, %s in the model" % (cid, live[cid]["state"], c.state))
        if self.outage == "outage_nri":
            return  # nobody pins: the restart's Synchronize must repair what happened meanwhile
        owner = {}
        for cid, c in sorted(self.containers.items()):
            if c.state != "running" or not c.claim:
                continue
            cpus = live[cid]["cpus"]
            if cpus != self.claims[c.claim].cpus:
                raise Fail("exclusive %s on %s, its claim %r" % (cid, fmt(cpus), self.claims[c.claim]))
            for cpu in cpus:
                if cpu in owner:
                    raise Fail("CPU %d in exclusive containers %s and %s" % (cpu, owner[cpu], cid))
                owner[cpu] = cid
        for c in self.running(False):
            both = live[c.cid]["cpus"] & set(owner)
            if both:
                raise Fail("shared %s on exclusive CPUs %s (of %s)" %
                           (c.cid, fmt(both), sorted({owner[x] for x in both})))

        pool = self.expected_pool(dump)
        allowed = pool | self.lazy()
        shared = [c.cid for c in self.running(False)]
        last = {}

        def on_pool(cpus):
            return pool <= cpus <= allowed

        def settled():
            d = self.node.shm_dump()
            live = self.node.containers()
            if self.widen:
                bad = {cid: fmt(live[cid]["cpus"]) for cid in shared if not on_pool(live[cid]["cpus"])}
            else:  # the pool if just synced, else an older pool: within allocatable, not empty
                alloc = cpulist(d["cpus"]["allocatable"])
                bad = {cid: fmt(live[cid]["cpus"]) for cid in shared
                       if (not on_pool(live[cid]["cpus"]) if self.synced == "all" or cid in self.synced
                           else not live[cid]["cpus"] or not live[cid]["cpus"] <= alloc)}
            published = cpulist(d["cpus"]["sharedPool"]) if d["cpus"]["sharedPoolPublished"] else None
            table = {c["id"]: cpulist(c["cpus"]) for c in d["containers"]}
            table_bad = {cid: fmt(table.get(cid, set())) for cid, c in live.items()
                         if c["state"] == "running" and table.get(cid) != c["cpus"]}
            table_extra = sorted(set(table) - set(live))
            violations, pool_violations = self.verify()
            if violations:
                raise Fail("dracpu-shm verify: " + "; ".join(violations))
            last.update(shared=bad, published=published, table=table_bad, table_extra=table_extra,
                        verify=pool_violations)
            return (not bad and published == pool and not table_bad and not table_extra and
                    not pool_violations)
        try:
            self.node.wait_for(settled, "agents to settle", timeout=SETTLE_TIMEOUT)
        except TimeoutError:
            raise Fail("not settled after %.0f s: pool %s; shared containers elsewhere %s; published "
                       "pool %s; containers table differs for running %s; table entries the runtime "
                       "lacks %s; verify %s" % (SETTLE_TIMEOUT, fmt(pool), last["shared"],
                                                fmt(last["published"]) if last["published"] is not None
                                                else "unpublished", last["table"], last["table_extra"],
                                                last["verify"]))

    # --- run ---------------------------------------------------------------------------------

    def run(self, steps, progress=0):
        self.learn_node()
        self.check()
        t0 = time.time()
        for self.step in range(1, steps + 1):
            self.history.append("%d: (starting)" % self.step)
            self.synced = set()
            kind, desc = self.do_step()
            self.history[-1] = "%d: %s" % (self.step, desc)
            if self.verbose:
                print(self.history[-1], flush=True)
            self.check()
            if progress and self.step % progress == 0 and self.step < steps:
                print("soak: seed %d, %d of %d steps passed, %.0f s" %
                      (self.seed, self.step, steps, time.time() - t0), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build_dir")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--machine", default=DEFAULT_MACHINE,
                    help="a ../shared/sysfs-corpus machine (default %(default)s)")
    ap.add_argument("--sysfs-root", help="a directory holding sys/devices/system/cpu instead")
    ap.add_argument("--runtime", choices=("modern", "legacy"), default="modern",
                    help="modern: NRI v0.12.1, the nri-agent widens running shared containers "
                    "(default); legacy: containerd 2.1 without an NRI version, it does not")
    ap.add_argument("--progress", type=int, default=1000, metavar="N",
                    help="a progress line every N steps (0: none; default %(default)s)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every step")
    args = ap.parse_args()

    shared = os.environ.get("DRACPU_SHARED_DIR", "")
    if not args.sysfs_root and not os.path.isfile(
            os.path.join(shared, "sysfs-corpus", args.machine, "tree.tar.gz")):
        print("soak: ../shared corpus machine %s absent (DRACPU_SHARED_DIR=%r): skipped" %
              (args.machine, shared))
        return 77
    t0 = time.time()
    node = WholeNode(args.build_dir, sysfs_root=args.sysfs_root,
                     machine=None if args.sysfs_root else args.machine, shared_dir=shared,
                     tmp_prefix="dracpu-soak-", log=lambda *_: None,
                     runtime_args=MODERN_RUNTIME if args.runtime == "modern" else ())
    expected = None
    if not args.sysfs_root:
        with open(os.path.join(shared, "sysfs-corpus", args.machine, "expected.json")) as f:
            expected = json.load(f)
    soak = Soak(node, args.seed, verbose=args.verbose, widen=args.runtime == "modern",
                expected=expected)
    where = (args.sysfs_root or args.machine) + ("" if args.runtime == "modern" else ", legacy runtime")
    try:
        node.start()
        soak.run(args.steps, args.progress)
    except (Fail, OSError, RuntimeError, TimeoutError, ValueError, KeyError) as e:
        print("SOAK FAILED: seed %d, step %d of %d (%s)" % (args.seed, soak.step, args.steps, where))
        print("  step:", soak.history[-1] if soak.history else "(start-up)")
        print("  error: %s: %s" % (type(e).__name__, e))
        print("  recent history:")
        for h in list(soak.history)[:-1]:
            print("    " + h)
        print("  model: claims %s" % sorted(soak.claims.values(), key=lambda c: c.uid))
        print("         containers %s" % ["%s:%s%s" % (c.cid, c.state, ":" + c.claim[-4:] if c.claim
                                                        else "") for c in soak.containers.values()])
        for name in ("dra-agent", "nri-agent", "runtime", "kubelet"):
            print("--- %s log (tail) ---\n%s" % (name, node._log_tail(name, 3000)))
        print("replay: soak.py %s --seed %d --steps %d%s --runtime %s -v" %
              (args.build_dir, args.seed, soak.step,
               " --sysfs-root " + args.sysfs_root if args.sysfs_root else " --machine " + args.machine,
               args.runtime))
        return 1
    finally:
        node.cleanup()
    print("soak passed: seed %d, %d steps on %s in %.1f s: %s" %
          (args.seed, args.steps, where, time.time() - t0,
           ", ".join("%s %d" % kv for kv in sorted(soak.counts.items()))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
