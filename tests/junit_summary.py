#!/usr/bin/env python3
"""Counts test cases in meson JUnit reports and prints 'N passed, N failed' (the line CI reads).

gtest binaries run with protocol 'gtest', so each TEST is one case; other tests count as one.
A missing report (the build failed before any test ran) counts as one failure.
Usage: junit_summary.py [--raw] REPORT.xml [REPORT.xml ...]
"""
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
    return passed, failed, skipped


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
