#!/usr/bin/env python3
"""Counts test cases in meson JUnit reports and prints 'N passed, N failed' (the line CI reads).

gtest binaries run with protocol 'gtest', so each TEST is one case; other tests count as one.
A missing report (the build failed before any test ran) counts as one failure.
Meson (1.0) writes a test that ran out of time with no <failure> when it has no subtests (a
gtest binary killed before writing its report): the testlog.json beside the report says
TIMEOUT, and such a test counts as failed here.
Usage: junit_summary.py [--raw] REPORT.xml [REPORT.xml ...]
"""
import json
import os
import sys
import xml.etree.ElementTree as ET


def count(path):
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        print("junit_summary: no usable report %s (%s)" % (path, e), file=sys.stderr)
        return 0, 1, 0
    passed = failed = skipped = 0
    for suite in root.iter("testsuite"):
        for case in suite.findall("testcase"):
            if case.find("failure") is not None or case.find("error") is not None:
                failed += 1
            elif case.find("skipped") is not None:
                skipped += 1
            else:
                passed += 1
    timed_out = timeouts(os.path.join(os.path.dirname(path), "testlog.json"))
    for suite in root.iter("testsuite"):
        for case in suite.findall("testcase"):
            key = (case.get("classname"), case.get("name"))
            if key in timed_out and case.find("failure") is None and case.find("error") is None:
                timed_out.discard(key)
                passed -= 1
                failed += 1
    failed += len(timed_out)  # reported nowhere in the XML
    return passed, failed, skipped


def timeouts(log):
    """(project, test name) of every TIMEOUT in meson's testlog.json, if there is one."""
    out = set()
    try:
        with open(log) as f:
            for line in f:
                entry = json.loads(line)
                if entry.get("result") != "TIMEOUT":
                    continue
                name = entry.get("name", "")  # "project:suite / test", the testcase's name
                out.add((name.partition(":")[0], name))
    except (OSError, ValueError):
        pass
    return out


def main(args):
    raw = args[:1] == ["--raw"]
    paths = args[1:] if raw else args
    totals = [0, 0, 0]
    for p in paths:
        for i, n in enumerate(count(p)):
            totals[i] += n
    if raw:  # "PASSED FAILED SKIPPED", for scripts
        print("%d %d %d" % tuple(totals))
        return 0
    line = "%d passed, %d failed" % (totals[0], totals[1])
    if totals[2]:
        line += ", %d skipped" % totals[2]
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
