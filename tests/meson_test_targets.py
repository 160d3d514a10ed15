#!/usr/bin/env python3
"""The ninja targets that the named meson tests need, one per line, so a slow build (make tsan)
can build only what it runs:

    meson_test_targets.py BUILD_DIR [TEST ...]

With no TEST it prints "all" (the default ninja target). An unknown test name is an error."""
import json
import os
import sys


def main():
    build, names = sys.argv[1], sys.argv[2:]
    if not names:
        print("all")
        return 0
    info = os.path.join(build, "meson-info")
    tests = {t["name"]: t for t in json.load(open(os.path.join(info, "intro-tests.json")))}
    files = {t["id"]: t["filename"] for t in json.load(open(os.path.join(info, "intro-targets.json")))}
    unknown = [n for n in names if n not in tests]
    if unknown:
        print("meson_test_targets.py: no such test in %s: %s" % (build, " ".join(unknown)),
              file=sys.stderr)
        return 1
    out = set()
    for name in names:
        for dep in tests[name]["depends"]:
            for f in files.get(dep, []):
                out.add(os.path.relpath(f, os.path.abspath(build)))
    print("\n".join(sorted(out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
