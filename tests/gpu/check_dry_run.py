#!/usr/bin/env python3
"""tests/gpu/check.sh's own logic, without a GPU (a CI test): it runs the check against stand-in binaries
that pass, fail, exit badly, crash and hang, and a build that fails, and asserts the report: a FAIL line
for each failure, naming the signal or the timeout, the last 40 lines of a failing build, the report
under $OUT and never in the work tree, every step killed at its limit with what it left running."""
import os
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECK = os.path.join(ROOT, "tests", "gpu", "check.sh")
LIMIT = 3  # every step's limit here (STINT_GPU_CHECK_STEP_TIMEOUT)

PASSING_CHECK = 'echo "PASS versions: stand-in"; echo "PASS clock mapping: stand-in"; exit 0'
PASSING_SMOKE = 'echo "[doctest] test cases: 5 | 5 passed | 0 failed"; exit 0'
PASSING_TORCH = 'echo "PASS one process, one after the other: stand-in"; exit 0'

failures = []
cases = []  # (name, failures before it)


def case(name):
    cases.append((name, len(failures)))


CHECKS = 0


def expect(ok, what, report=""):
    global CHECKS
    CHECKS += 1
    if not ok:
        failures.append(what)
        print(f"FAILED: {what}\n--- report ---\n{report}\n---------------", flush=True)


def make_bin(folder, check, smoke=PASSING_SMOKE, probe="exit 0"):
    os.makedirs(folder, exist_ok=True)
    for name, body in (("gpu_check", f'if [ "${{1:-}}" = probe ]; then {probe}; fi\n{check}'),
                       ("gpu_smoke_tests", smoke)):
        path = os.path.join(folder, name)
        with open(path, "w") as f:
            f.write("#!/usr/bin/env bash\n" + body + "\n")
        os.chmod(path, 0o755)


def make_script(path, body):
    with open(path, "w") as f:
        f.write("#!/usr/bin/env bash\n" + body + "\n")
    os.chmod(path, 0o755)
    return path


def run(tmp, args, torch=PASSING_TORCH, out=True, path_prefix=None):
    env = dict(os.environ)
    env["STINT_GPU_CHECK_STEP_TIMEOUT"] = str(LIMIT)
    env["STINT_GPU_CHECK_PYTHON"] = make_script(os.path.join(tmp, "python"), torch)
    out_dir = os.path.join(tmp, "out")
    os.makedirs(out_dir, exist_ok=True)
    if out:
        env["OUT"] = out_dir
    else:
        env.pop("OUT", None)
    if path_prefix:
        env["PATH"] = path_prefix + os.pathsep + env["PATH"]
    t0 = time.monotonic()
    p = subprocess.run(["bash", CHECK, *args], env=env, capture_output=True, text=True, timeout=120)
    seconds = time.monotonic() - t0
    report_path = os.path.join(out_dir, "gpu-check-report.txt")
    report = open(report_path).read() if os.path.exists(report_path) else ""
    return p, report, seconds


def scenario(name, check=PASSING_CHECK, smoke=PASSING_SMOKE, torch=PASSING_TORCH, probe="exit 0"):
    tmp = tempfile.mkdtemp(prefix=f"stint-dry-run-{name}-")
    make_bin(os.path.join(tmp, "bin"), check, smoke, probe)
    p, report, seconds = run(tmp, ["--bin", os.path.join(tmp, "bin")], torch)
    return tmp, p, report, seconds


def main():
    before = set(os.listdir(ROOT))

    case("pass")
    # Everything passes: exit 0, every line in the report under $OUT, the summary counts them.
    _, p, report, _ = scenario("pass")
    expect(p.returncode == 0, "pass: exit 0", report + p.stdout + p.stderr)
    for want in ("PASS versions: stand-in", "PASS clock mapping: stand-in", "PASS smoke test",
                 "PASS one process, one after the other: stand-in"):
        expect(want in report, f"pass: '{want}' in the report", report)
    expect("FAIL" not in report, "pass: no FAIL line", report)
    expect("gpu check: 4 passed, 0 failed" in p.stdout, "pass: the summary", p.stdout)

    case("fail")
    # A check that fails says so itself: its FAIL line, exit 1, no second line for the exit.
    _, p, report, _ = scenario("fail", check='echo "PASS a: fine"; echo "FAIL b: broken"; exit 1')
    expect(p.returncode == 1, "fail: exit 1", report)
    expect("FAIL b: broken" in report, "fail: its FAIL line", report)
    expect("FAIL gpu_check: exit" not in report, "fail: no second FAIL line", report)
    expect("gpu check: 3 passed, 1 failed" in p.stdout, "fail: the summary", p.stdout)

    case("bad exit")
    # A failing exit with no FAIL line of its own ("3 passed, 0 failed" and exit 1, before): one is written.
    _, p, report, _ = scenario("bad-exit", check='echo "PASS a: fine"; echo "some last words"; exit 1')
    expect(p.returncode == 1, "bad exit: exit 1", report)
    expect("FAIL gpu_check: exit 1" in report, "bad exit: a FAIL line", report)
    expect("some last words" in report, "bad exit: its last lines", report)

    case("crash")
    # A crash: the signal by name, for the check and for the smoke test.
    _, p, report, _ = scenario("crash", check='echo "PASS a: fine"; kill -SEGV $$',
                               smoke='echo "[doctest] running"; kill -ABRT $$')
    expect(p.returncode == 1, "crash: exit 1", report)
    expect("FAIL gpu_check: killed by signal SIGSEGV (exit 139)" in report, "crash: SIGSEGV named", report)
    expect("FAIL smoke_test: killed by signal SIGABRT (exit 134)" in report, "crash: SIGABRT named", report)
    expect("PASS one process" in report, "crash: the later steps still run", report)

    case("hang")
    # A hang, with a child left running, and one that ignores SIGTERM: killed at the limit, all of it.
    tmp, p, report, seconds = scenario(
        "hang", check='echo "PASS a: fine"; sleep 1000 & echo $! > "$(dirname "$0")/child.pid"; wait',
        torch="trap '' TERM; echo 'INFO torch: stuck'; while :; do sleep 0.2; done")
    expect(p.returncode == 1, "hang: exit 1", report)
    expect(f"FAIL gpu_check: timed out after {LIMIT} s, killed with SIGTERM" in report, "hang: timed out", report)
    expect(f"FAIL torch_check: timed out after {LIMIT} s, killed with SIGKILL" in report,
           "hang: SIGTERM ignored, then SIGKILL", report)
    expect("INFO torch: stuck" in report, "hang: what it printed is kept", report)
    expect(seconds < 2 * LIMIT + 5 + 15, f"hang: over in {seconds:.1f} s", report)
    child = int(open(os.path.join(tmp, "bin", "child.pid")).read())
    try:
        os.kill(child, 0)
        alive = True
        os.kill(child, signal.SIGKILL)
    except ProcessLookupError:
        alive = False
    expect(not alive, "hang: the step's child was killed with it", report)

    case("no GPU")
    # No GPU: one line, exit 0, nothing else run.
    _, p, report, _ = scenario("no-gpu", probe='echo "gpu check: no GPU here (no NVIDIA driver)"; exit 3',
                               check='echo "FAIL should not run"; exit 1')
    expect(p.returncode == 0, "no GPU: exit 0", report + p.stdout)
    expect("gpu check: no GPU here (no NVIDIA driver)" in report, "no GPU: said", report)
    expect("FAIL" not in report, "no GPU: nothing run", report)

    case("build")
    # A failing build (no --bin): FAIL build and its last 40 lines, not hidden, not all of them.
    tmp = tempfile.mkdtemp(prefix="stint-dry-run-build-")
    tools = os.path.join(tmp, "tools")
    os.makedirs(tools)
    for tool in ("meson", "ninja"):
        make_script(os.path.join(tools, tool), 'for i in $(seq 1 60); do echo "build output line $i"; done; exit 1')
    p, report, _ = run(tmp, [], path_prefix=tools)
    expect(p.returncode == 1, "build: exit 1", report + p.stdout + p.stderr)
    expect("FAIL build: exit 1" in report, "build: FAIL line", report)
    expect("  | build output line 60" in report and "  | build output line 21" in report, "build: last 40 lines",
           report)
    expect("build output line 20\n" not in report, "build: only the last 40 lines", report)

    case("report")
    # The report: never inside the work tree; /tmp when neither OUT nor --report says where.
    tmp = tempfile.mkdtemp(prefix="stint-dry-run-report-")
    make_bin(os.path.join(tmp, "bin"), PASSING_CHECK)
    p, _, _ = run(tmp, ["--bin", os.path.join(tmp, "bin"), "--report", os.path.join(ROOT, "r.txt")], out=False)
    expect(p.returncode == 2 and "inside the work tree" in p.stderr, "report: refused in the work tree", p.stderr)
    p, _, _ = run(tmp, ["--bin", os.path.join(tmp, "bin")], out=False)
    expect(p.returncode == 0 and "(report: /tmp/stint-gpu-check-" in p.stdout, "report: /tmp by default", p.stdout)
    expect(set(os.listdir(ROOT)) == before, "nothing written into the work tree", str(set(os.listdir(ROOT)) - before))

    bounds = [start for _, start in cases] + [len(failures)]
    failed_cases = sum(1 for i in range(len(cases)) if bounds[i + 1] > bounds[i])
    total_checks = CHECKS
    print(f"check.sh dry run: {len(failures)} failed" + ("" if not failures else ": " + "; ".join(failures)))
    # doctest's summary line, which tools/run_tests.py reads.
    print(f"[doctest] test cases: {len(cases)} | {len(cases) - failed_cases} passed | {failed_cases} failed | 0 skipped")
    print(f"[doctest] assertions: {total_checks} | {total_checks - len(failures)} passed | {len(failures)} failed |")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
