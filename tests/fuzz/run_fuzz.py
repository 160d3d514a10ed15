#!/usr/bin/env python3
"""make fuzz: runs every libFuzzer target of a -Dfuzzing=true build for a fixed time and prints,
per target, executions, coverage and the outcome; exits 1 on any crash, leak, timeout,
out-of-memory, sanitizer report or broken contract, naming the saved input and the command that
replays it.

    run_fuzz.py BUILD_DIR [--seconds N] [--jobs J] [--only a,b] [--work DIR] [--junit FILE]

Each target <name> is BUILD_DIR/tests/fuzz/<name>_fuzzer with its seed corpus
tests/fuzz/corpus/<name>/ (read only). New inputs go to WORK/<name>/corpus (kept between runs
of one build directory, so local runs get better over time; CI starts empty) and artifacts to
WORK/<name>/. A found input belongs in tests/fuzz/regressions/<name>/ once fixed: the normal
suite replays it from there (test fuzz_<name>). --junit writes one test case per target (what
.ci/run counts)."""
import argparse
import os
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(SOURCE, "tests", "fuzz", "corpus")
REGRESSIONS = os.path.join(SOURCE, "tests", "fuzz", "regressions")
FAILURE = re.compile(r"ERROR: (libFuzzer|AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer)"
                     r"|runtime error:|fuzz contract broken|SUMMARY: ")
DONE = re.compile(r"#(\d+)\s+\w+\s+cov: (\d+) ft: (\d+) corp: (\d+)")  # the last status line
STAT = re.compile(r"stat::(\w+):\s+(\d+)")
# Inputs bigger than libFuzzer's default 4096 bytes (the shm target's raw mode needs a whole
# segment file, about 21 KiB with one claim and one container).
MAX_LEN = {"shm_segment": 32768}


def targets(build):
    d = os.path.join(build, "tests", "fuzz")
    names = sorted(f[: -len("_fuzzer")] for f in os.listdir(d)
                   if f.endswith("_fuzzer") and os.access(os.path.join(d, f), os.X_OK))
    return [(n, os.path.join(d, n + "_fuzzer")) for n in names]


def start(name, exe, seconds, work):
    out = os.path.join(work, name)
    corpus = os.path.join(out, "corpus")
    os.makedirs(corpus, exist_ok=True)
    for f in os.listdir(out):  # artifacts of an earlier run are not this run's findings
        if re.match(r"(crash|leak|timeout|oom|slow-unit)-", f):
            os.remove(os.path.join(out, f))
    seeds = [os.path.join(CORPUS, name)]
    if os.path.isdir(os.path.join(REGRESSIONS, name)):
        seeds.append(os.path.join(REGRESSIONS, name))
    cmd = [exe, "-max_total_time=%d" % seconds, "-print_final_stats=1", "-timeout=10",
           "-rss_limit_mb=2048", "-artifact_prefix=" + out + "/"]
    if name in MAX_LEN:
        cmd.append("-max_len=%d" % MAX_LEN[name])
    cmd += [corpus] + seeds
    env = dict(os.environ)
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=1:symbolize=1")
    env.setdefault("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1")
    log = open(os.path.join(out, "fuzz.log"), "w")
    return {"name": name, "cmd": cmd, "log": log.name, "out": out,
            "proc": subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env),
            "started": time.time()}


def finish(run):
    rc = run["proc"].wait()
    text = open(run["log"], errors="replace").read()
    done = DONE.findall(text)
    stats = dict(STAT.findall(text))
    artifacts = sorted(f for f in os.listdir(run["out"])
                       if re.match(r"(crash|leak|timeout|oom|slow-unit)-", f))
    failed = rc != 0 or bool(FAILURE.search(text)) or any(not a.startswith("slow-unit") for a in artifacts)
    run.update(rc=rc, failed=failed, artifacts=artifacts, text=text,
               execs=int(stats.get("number_of_executed_units", done[-1][0] if done else 0)),
               cov=int(done[-1][1]) if done else 0, ft=int(done[-1][2]) if done else 0,
               corp=int(done[-1][3]) if done else 0, secs=time.time() - run["started"])
    return run


def write_junit(path, results):
    suite = ET.Element("testsuite", name="fuzz", tests=str(len(results)),
                       failures=str(sum(r["failed"] for r in results)))
    for r in results:
        case = ET.SubElement(suite, "testcase", classname="fuzz", name=r["name"],
                             time="%.1f" % r["secs"])
        case.text = "%d executions, cov %d, ft %d" % (r["execs"], r["cov"], r["ft"])
        if r["failed"]:
            tail = "\n".join(r["text"].splitlines()[-40:])
            ET.SubElement(case, "failure", message="exit %d, see %s" % (r["rc"], r["log"])).text = (
                re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f]", "?", tail))  # not allowed in XML
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    root = ET.Element("testsuites")
    root.append(suite)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--only", default="")
    ap.add_argument("--work", default="")
    ap.add_argument("--junit", default="")
    args = ap.parse_args()
    work = args.work or os.path.join(args.build, "fuzz-work")
    todo = targets(args.build)
    if args.only:
        wanted = set(args.only.split(","))
        todo = [t for t in todo if t[0] in wanted]
    if not todo:
        print("make fuzz: no fuzz targets in %s (configure it with -Dfuzzing=true)" % args.build)
        return 1
    print("make fuzz: %d targets, %d s each, %d at a time" % (len(todo), args.seconds, args.jobs))
    running, results = [], []
    while todo or running:
        while todo and len(running) < args.jobs:
            name, exe = todo.pop(0)
            running.append(start(name, exe, args.seconds, work))
        time.sleep(0.2)
        for run in [r for r in running if r["proc"].poll() is not None]:
            running.remove(run)
            results.append(finish(run))
            r = results[-1]
            print("  %-16s %s" % (r["name"], "FAILED" if r["failed"] else "ok"), flush=True)
    results.sort(key=lambda r: r["name"])
    print("\n%-16s %12s %9s %7s %7s %6s  %s" % ("TARGET", "EXECUTIONS", "EXEC/S", "COV", "FEAT",
                                               "CORPUS", "RESULT"))
    for r in results:
        print("%-16s %12d %9d %7d %7d %6d  %s" % (
            r["name"], r["execs"], r["execs"] / max(r["secs"], 1), r["cov"], r["ft"], r["corp"],
            "FAILED (exit %d)" % r["rc"] if r["failed"] else "0 crashes"))
    failed = [r for r in results if r["failed"]]
    for r in failed:
        print("\n==== %s failed; its log %s ends:" % (r["name"], r["log"]))
        print("\n".join(r["text"].splitlines()[-40:]))
        for a in r["artifacts"]:
            path = os.path.join(r["out"], a)
            print("saved input: %s\n  replay: %s %s\n  then fix, and keep it as a regression: "
                  "cp %s %s/" % (path, r["cmd"][0], path, path, os.path.join(REGRESSIONS, r["name"])))
    if args.junit:
        write_junit(args.junit, results)
    print("\nmake fuzz: %d targets, %d failed" % (len(results), len(failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
