#!/usr/bin/env python3
"""Runs every test binary of one or more meson build directories and sums doctest's counts.

Prints each binary's doctest summary and ends with one line `N passed, N failed, N skipped` (test cases,
summed over all binaries; skipped: suites skipped, each named with its reason, and test cases a suite
skipped, e.g. a memory bound under a sanitizer, counted from its summary). A binary that crashes or prints no
summary counts as one failed test case; one whose program (or a program it runs, meson's `depends`)
was not built is one failure, named "not built", and is not run. A suite that exits 77 with no summary is skipped, as meson does: the GPU smoke test where no
GPU is, and each suite this build could not make (tests/meson.build registers it as a stand-in that
exits 77 with the reason: no CUDA headers, no MPI). Where STINT_TESTS_MAY_SKIP is set (CI: a
comma-separated list of the suites its machine cannot run), a skip of any other suite is a failure.
Exit status is non-zero on any failure.

usage: tools/run_tests.py BUILD_DIR [BUILD_DIR ...] [--only NAME,NAME] [--skip NAME,NAME]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

SUMMARY = re.compile(r"\[doctest\] test cases:\s*(\d+)\s*\|\s*(\d+) passed\s*\|\s*(\d+) failed(?:\s*\|\s*(\d+) skipped)?")
# A test case skipped inside a suite (doctest::skip, a script's case that cannot run here) says why in
# the suite's own output; its reason is printed from there.
SKIP_REASON = re.compile(r"^(?:skipped: .*|.*: MESSAGE: skipped: .*)$", re.M)


def tests_of(build_dir):
    out = subprocess.run(["meson", "introspect", "--tests", build_dir], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def files_of_targets(build_dir):
    """{target id: [the files it builds]}, to tell which of a test's programs were not built."""
    out = subprocess.run(["meson", "introspect", "--targets", build_dir], check=True, capture_output=True, text=True)
    return {target["id"]: target["filename"] for target in json.loads(out.stdout)}


def missing_files(test, built_by):
    """The test's program and the programs it depends on (a script's subject) that do not exist."""
    wanted = [test["cmd"][0]] + [f for target in test.get("depends") or [] for f in built_by.get(target, [])]
    return [path for path in dict.fromkeys(wanted) if not os.path.exists(path)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build_dirs", nargs="+")
    parser.add_argument("--only", default="", help="comma-separated test names to run (default: all)")
    parser.add_argument("--skip", default="", help="comma-separated test names not to run")
    parser.add_argument("--env", action="append", default=[], help="extra NAME=VALUE for the tests")
    args = parser.parse_args()
    only = {name for name in args.only.split(",") if name}
    skip = {name for name in args.skip.split(",") if name}
    passed = failed = skipped = 0
    may_skip = os.environ.get("STINT_TESTS_MAY_SKIP")
    may_skip = None if may_skip is None else {name for name in may_skip.split(",") if name}
    seen = set()
    for build_dir in args.build_dirs:
        built_by = files_of_targets(build_dir)
        for test in tests_of(build_dir):
            seen.add(test["name"])
            if (only and test["name"] not in only) or test["name"] in skip:
                continue
            env = dict(os.environ)
            env.update(test.get("env") or {})
            for pair in args.env:
                key, _, value = pair.partition("=")
                env[key] = value
            label = f"{os.path.basename(os.path.normpath(build_dir))}/{test['name']}"
            started = time.monotonic()
            missing = missing_files(test, built_by)
            if missing:
                # A build that failed or was not asked for: the test would run nothing, or stale files.
                failed += 1
                inside = os.path.abspath(build_dir) + os.sep
                what = "not built" if all(os.path.abspath(m).startswith(inside) for m in missing) else "cannot run"
                print(f"{label}: 0 passed, 1 failed (FAILED: {what}, missing {' '.join(missing)})", flush=True)
                continue
            try:
                run = subprocess.run(test["cmd"], cwd=test.get("workdir") or build_dir, env=env,
                                     capture_output=True, text=True, errors="replace",
                                     timeout=test.get("timeout") or 600)
                output = run.stdout + run.stderr
                code = run.returncode
            except subprocess.TimeoutExpired as exc:
                output = (exc.stdout or b"").decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
                code = -1
                output += "\n(timed out)"
            match = SUMMARY.search(output)
            if code == 77 and not match:
                # automake's and meson's "skipped": a test that needs what this machine lacks (a GPU).
                last = output.strip().splitlines()[-1:] or ["(no output)"]
                last = [last[0].removeprefix("skipped: ")]
                if may_skip is not None and test["name"] not in may_skip:
                    failed += 1
                    print(f"{label}: 0 passed, 1 failed (FAILED: skipped where it must run, "
                          f"STINT_TESTS_MAY_SKIP={','.join(sorted(may_skip))}): {last[0]}", flush=True)
                    continue
                skipped += 1
                print(f"{label}: skipped: {last[0]}", flush=True)
                continue
            s = 0
            if match:
                p, f = int(match.group(2)), int(match.group(3))
                s = int(match.group(4) or 0)  # no test filter is given, so these are skips the suite chose
                if code != 0 and f == 0:
                    f = 1  # crashed after its summary, or failed outside a test case
            else:
                p, f = 0, 1
            passed += p
            failed += f
            skipped += s
            status = "ok" if f == 0 else "FAILED"
            counts = f"{p} passed, {f} failed" + (f", {s} skipped" if s else "")
            print(f"{label}: {counts} ({status}, {time.monotonic() - started:.1f} s)", flush=True)
            for reason in SKIP_REASON.findall(output) if s else []:
                print(f"  {reason.strip()}", flush=True)
            if f:
                print(output[-6000:], flush=True)
    for name in sorted(only - seen):  # asked for by name, and no build directory has it
        failed += 1
        print(f"{name}: 0 passed, 1 failed (FAILED: no test of that name in {' '.join(args.build_dirs)})", flush=True)
    print(f"{passed} passed, {failed} failed, {skipped} skipped", flush=True)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
