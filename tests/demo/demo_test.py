#!/usr/bin/env python3
"""`make demo` as a test: tests/demo/demo.sh on a recorded machine of ../shared.

  demo_test.py BUILD_DIR                 runs the whole demo: exit 0 in under 60 s, the story's
                                         key lines, and nothing left behind
  demo_test.py BUILD_DIR --interrupt     sends SIGINT, then (second run) SIGTERM midway: exit
                                         130 and nothing left behind

"Nothing left behind": no process of the demo's session is alive, no process mentions its temp
dir, and the temp dir is gone. Exit 77 = skipped (no ../shared, i.e. DRACPU_SHARED_DIR).
"""
import json
import os
import re
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MACHINE = "intel-skylake-sp-2s-ht-pci"
KEY_LINES = [
    r"== 1\. The node: recorded machine intel-skylake-sp-2s-ht-pci",
    r"Real pinning: OFF",
    r"Running as (root|uid \d+ \(not root\))",
    r"== 3\. ResourceSlices the scheduler sees",
    r"cpudevnuma000 +0 +0 +true +15 ",
    r"cpudevnuma001 +1 +1 +true +16 ",
    r"claim A  demo/numa0-claim: 4 CPUs of cpudevnuma000 \(NUMA node 0\) -> CPUs ",
    r"pod-numa0/app-a created -> cpuset \S+ \(pinned to claim A\)",
    r"claim B  demo/fullcore-claim: 4 CPUs as whole cores \(2 thread\(s\) per core\) of cpudevnuma001",
    r"pod-fullcore/app-b created -> cpuset \S+ \(pinned to claim B\)",
    r"== 6\. dracpu-shm dump",
    r"== 6b\. dracpu-shm map: who holds which CPU, both claims pinned",
    r"socket 0 · NUMA node 0 · L3 0",
    r"(?m)^A  claim demo/numa0-claim  4 CPUs: \S+\n     prepared · pod default/pod-numa0/app-a",
    r"(?m)^B  claim demo/fullcore-claim  4 CPUs: \S+\n     prepared · pod default/pod-fullcore/app-b",
    r"nri-agent killed \(SIGKILL\)",
    r"containers unchanged",
    r"-> CPUs \S+ \(unchanged\)",
    r"shared pool: \S+ \(28 CPUs, \+4\)",
    r"the running shared containers were widened",
    r"dracpu-shm verify: ok",
    r"== Done in [0-9.]+ s",
]


def session_pids(sid):
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            out.append(int(d))
    return out


def mentioning(text):
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit() and int(d) != os.getpid():
            try:
                with open("/proc/%s/cmdline" % d, "rb") as f:
                    if text.encode() in f.read():
                        out.append(int(d))
            except OSError:
                pass
    return out


def run_demo(build, interrupt=None, after=r"== 5\. "):
    env = dict(os.environ, MACHINE=MACHINE)
    env.pop("SYSFS_ROOT", None)
    start = time.time()
    p = subprocess.Popen(["bash", os.path.join(HERE, "demo.sh"), build], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True)
    lines = []
    tmp = None
    sent = False
    for line in p.stdout:
        lines.append(line)
        m = re.search(r"private sockets under (/tmp/dracpu-demo-\S+)", line)
        if m:
            tmp = m.group(1)
        if interrupt and not sent and re.search(after, line):
            p.send_signal(interrupt)
            sent = True
    rc = p.wait()
    return rc, "".join(lines), tmp, time.time() - start, p.pid


def leftovers(sid, tmp):
    time.sleep(0.2)
    problems = []
    pids = session_pids(sid)
    if pids:
        problems.append("processes of the demo's session still alive: %s" % pids)
    if tmp:
        if os.path.exists(tmp):
            problems.append("temp dir %s left behind" % tmp)
        pids = mentioning(tmp)
        if pids:
            problems.append("processes mentioning %s: %s" % (tmp, pids))
    else:
        problems.append("the demo did not print its temp dir")
    return problems


def sanitized(build):
    """True in the ASan/UBSan build, whose agents are too slow for the 60 s promise."""
    try:
        with open(os.path.join(build, "meson-info", "intro-buildoptions.json")) as f:
            return any(o["name"] == "b_sanitize" and o["value"] not in ("none", [])
                       for o in json.load(f))
    except (OSError, ValueError):
        return False


def main():
    build = os.path.abspath(sys.argv[1])
    shared = os.environ.get("DRACPU_SHARED_DIR", "")
    if not os.path.isfile(os.path.join(shared, "sysfs-corpus", MACHINE, "tree.tar.gz")):
        print("../shared (DRACPU_SHARED_DIR) is absent: demo test skipped")
        return 77
    failures = []
    if "--interrupt" in sys.argv:
        for sig in (signal.SIGINT, signal.SIGTERM):
            rc, out, tmp, secs, sid = run_demo(build, sig)
            print("%s midway: exit %d after %.1f s" % (sig.name, rc, secs))
            if rc != 130 or "interrupted" not in out:
                failures.append("%s: exit %d, output:\n%s" % (sig.name, rc, out[-3000:]))
            failures += ["%s: %s" % (sig.name, p) for p in leftovers(sid, tmp)]
    else:
        rc, out, tmp, secs, sid = run_demo(build)
        print(out)
        print("demo: exit %d in %.1f s" % (rc, secs))
        if rc != 0:
            failures.append("exit %d" % rc)
        if secs >= 60 and not sanitized(build):
            failures.append("took %.1f s (limit 60)" % secs)
        failures += ["missing line /%s/" % k for k in KEY_LINES if not re.search(k, out)]
        failures += leftovers(sid, tmp)
    for f in failures:
        print("FAIL:", f)
    if not failures:
        print("demo test: all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
