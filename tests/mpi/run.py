#!/usr/bin/env python3
"""examples/mpi_job.cpp under `mpirun -np 4 --oversubscribe`, its traces read back.

usage: run.py MPI_JOB STINT_MERGE MPIRUN

MPI_JOB is the example built with STINT_DETAIL_TEST_CLOCK_SKEW: a rank whose STINT_TEST_CLOCK_SKEW_NS
is set reads its steady and wall clocks that far off, as a host whose clocks disagree would.

The ranks compute for unequal times and meet at a barrier, five times. No rank leaves barrier k before
every rank has entered it, so every rank's "compute" of phase k+1 starts after every rank's "compute"
of phase k ended. On one timeline that must hold within the ranks' error bounds, in the job's trace
(rank 0 gathers) and in stint-merge's merge of the per-rank traces: first with the clocks as they
are, then with rank 1's clock 5 ms behind and rank 2's 5 ms ahead. Merged without alignment
(--no-align), the skewed ranks' traces break it by milliseconds: the skew was real.

Last, a job whose rank 0 cannot write the job's file: every rank throws the same error.

Prints one line per check and ends with doctest's summary line, which tools/run_tests.py counts.
"""
import glob
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

RANKS = 4
PHASES = 5
SKEW_NS = 5_000_000

failures = []
passed = 0


def check(ok, what):
    global passed
    if ok:
        passed += 1
        print(f"ok: {what}")
    else:
        failures.append(what)
        print(f"FAILED: {what}")


def run_job(job, mpirun, out_dir, skews):
    # Each rank's environment is its own: a shell sets the skew of the ranks that get one.
    script = 'case "$OMPI_COMM_WORLD_RANK" in ' + " ".join(
        f'{rank}) export STINT_TEST_CLOCK_SKEW_NS={ns};;' for rank, ns in skews.items()) + ' esac; exec "$0" "$@"'
    cmd = [mpirun, "-np", str(RANKS), "--oversubscribe"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    cmd += ["sh", "-c", script, job, out_dir]
    # Shared memory without the kernel's cross-memory attach, which containers often forbid (ptrace).
    env = dict(os.environ, OMPI_MCA_btl_vader_single_copy_mechanism="none")
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=env)
    if run.returncode != 0:
        print(run.stdout[-3000:], run.stderr[-3000:])
    return run


def phases_by_rank(trace):
    """{pid: [(start_ns, end_ns) of compute, phase order]} from a trace's "compute" events."""
    out = {}
    for e in trace["traceEvents"]:
        if e.get("ph") == "X" and e.get("name") == "compute":
            start = round(float(e["ts"]) * 1000)
            out.setdefault(e["pid"], []).append((start, start + round(float(e["dur"]) * 1000)))
    for spans in out.values():
        spans.sort()
    return out


def barrier_violation(trace, errors):
    """The most any rank's compute k+1 starts before another rank's compute k ends, beyond both ranks'
    error bounds (ns); <= 0 when the barriers hold on this timeline."""
    spans = phases_by_rank(trace)
    worst = -10**18
    for k in range(PHASES - 1):
        for i, mine in spans.items():
            for j, theirs in spans.items():
                late_end = theirs[k][1]
                early_start = mine[k + 1][0]
                worst = max(worst, late_end - early_start - errors.get(i, 0) - errors.get(j, 0))
    return worst


def load(path):
    with open(path) as f:
        return json.load(f)


def check_job(label, out_dir, merge):
    job = load(os.path.join(out_dir, "job.pt.trace.json"))
    block = job["stint"]
    ranks = block["ranks"]
    check([r["rank"] for r in ranks] == list(range(RANKS)), f"{label}: the job trace lists every rank's counts")
    recorded = sum(r["stint"]["recorded"] for r in ranks)
    check(block["recorded"] == recorded and recorded > 0 and block["dropped"] == 0,
          f"{label}: the job's recorded count is the ranks' sum ({recorded}), nothing dropped")
    names = {e["pid"]: e["args"]["name"] for e in job["traceEvents"]
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    check(names == {r: f"rank {r}" for r in range(RANKS)}, f"{label}: one process per rank, named 'rank N': {names}")
    spans = phases_by_rank(job)
    check(sorted(spans) == list(range(RANKS)) and all(len(s) == PHASES for s in spans.values()),
          f"{label}: every rank's {PHASES} phases are in the job trace")
    errors = {r["rank"]: r["clock_error_ns"] for r in ranks}
    check(all(0 <= e < 2_000_000 for e in errors.values()), f"{label}: error bounds {errors} ns")
    violation = barrier_violation(job, errors)
    check(violation <= 0, f"{label}: job trace: no rank's phase starts before a barrier released it "
                          f"(worst {violation} ns beyond the bounds)")

    per_rank = [os.path.join(out_dir, f"rank{r}.pt.trace.json") for r in range(RANKS)]
    for r, path in enumerate(per_rank):
        info = load(path).get("distributedInfo", {})
        check(info.get("rank") == r and info.get("world_size") == RANKS and "clock_offset_ns" in info
              and "clock_error_ns" in info, f"{label}: rank{r}'s own trace carries its clock offset: {info}")
    merged_path = os.path.join(out_dir, "merged.json")
    run = subprocess.run([sys.executable, merge] + per_rank + ["-o", merged_path], capture_output=True, text=True)
    check(run.returncode == 0 and run.stdout.count("moved by") == RANKS,
          f"{label}: stint-merge aligned every rank's file: {run.stdout.strip()!r} {run.stderr.strip()!r}")
    merged = load(merged_path)
    merged_errors = {r["rank"]: r["clock_error_ns"] for r in merged["stint"]["ranks"]}
    violation = barrier_violation(merged, merged_errors)
    check(violation <= 0, f"{label}: stint-merge's trace: the barriers hold (worst {violation} ns beyond the bounds)")
    return per_rank


def guide_commands(job, merge, mpirun):
    """docs/guide/08-many-processes.md's mpirun and stint-merge lines, run as written in a fresh folder
    (no out/ yet), only the paths of the programs this build made put in: the example makes out/, each
    rank prints its trace's clock_offset_ns."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    page = open(os.path.join(root, "docs", "guide", "08-many-processes.md"), encoding="utf-8").read()
    block = page.split("To run `examples/mpi_job.cpp`", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    lines = [shlex.split(line, comments=True) for line in block.splitlines()]
    mpi_line = next(words for words in lines if words and words[0] == "mpirun")
    merge_line = next(words for words in lines if words and words[0] == "tools/stint-merge")
    programs = {"mpirun": mpirun, "build-mpi/examples/mpi_job": os.path.abspath(job),
                "tools/stint-merge": os.path.abspath(merge)}
    with tempfile.TemporaryDirectory() as work:
        env = dict(os.environ, OMPI_MCA_btl_vader_single_copy_mechanism="none")  # containers forbid CMA
        run = subprocess.run([programs.get(w, w) for w in mpi_line], cwd=work, capture_output=True, text=True,
                             timeout=240, env=env)
        check(run.returncode == 0, f"the guide's line runs as written: {shlex.join(mpi_line)}\n{run.stderr[-2000:]}")
        if run.returncode != 0:
            return
        printed = {int(m.group(1)): int(m.group(2))
                   for m in re.finditer(r"^rank (\d+): clock_offset_ns (-?\d+),", run.stdout, re.M)}
        traces = {r: load(os.path.join(work, "out", f"rank{r}.pt.trace.json")) for r in range(RANKS)}
        check(os.path.exists(os.path.join(work, "out", "job.pt.trace.json")), "the example made out/ and wrote the job")
        check(printed == {r: t["distributedInfo"]["clock_offset_ns"] for r, t in traces.items()},
              f"each rank prints its trace's clock_offset_ns: {printed}")
        merged = subprocess.run([sys.executable] + [programs.get(w, w) for w in merge_line[:1]] +
                                [f for a in merge_line[1:]  # the shell's glob, as a shell expands it
                                 for f in (sorted(glob.glob(os.path.join(work, a))) if "*" in a else [a])],
                                cwd=work, capture_output=True, text=True, timeout=120)
        check(merged.returncode == 0 and os.path.exists(os.path.join(work, "job.json")),
              f"the guide's merge line runs: {merged.stdout[-500:]}{merged.stderr[-1000:]}")


def main():
    job, merge, mpirun = sys.argv[1:4]
    with tempfile.TemporaryDirectory() as plain_dir, tempfile.TemporaryDirectory() as skewed_dir:
        run = run_job(job, mpirun, plain_dir, {})
        check(run.returncode == 0, "mpirun -np 4: the job ran")
        if run.returncode == 0:
            check_job("clocks as they are", plain_dir, merge)

        skews = {1: -SKEW_NS, 2: SKEW_NS}
        run = run_job(job, mpirun, skewed_dir, skews)
        check(run.returncode == 0, "mpirun -np 4 with two ranks' clocks 5 ms off: the job ran")
        if run.returncode == 0:
            per_rank = check_job("rank 1 -5 ms, rank 2 +5 ms", skewed_dir, merge)
            for rank, skew in skews.items():
                info = load(per_rank[rank])["distributedInfo"]
                offset = info["clock_offset_ns"]
                check(abs(offset + skew) <= info["clock_error_ns"] + 100_000,
                      f"rank {rank}'s measured offset {offset} ns undoes its {skew:+} ns skew")
            naive = os.path.join(skewed_dir, "naive.json")
            subprocess.run([sys.executable, merge, "--no-align"] + per_rank + ["-o", naive], check=True,
                           capture_output=True)
            violation = barrier_violation(load(naive), {})
            check(violation > SKEW_NS // 5,
                  f"without alignment the skewed clocks break the barriers by {violation} ns (the skew is real)")
    # Rank 0 cannot write the job's file (a directory stands at its path); each rank writes its own
    # trace, then every rank must throw rank 0's error, the same text, and leave with status 1.
    with tempfile.TemporaryDirectory() as blocked_dir:
        path = os.path.join(blocked_dir, "job.pt.trace.json")
        os.mkdir(path)
        run = run_job(job, mpirun, blocked_dir, {})
        errors = [line for line in run.stderr.splitlines() if line.startswith("stint: ")]
        check(run.returncode != 0, f"rank 0 cannot write the job's trace: the job fails (status {run.returncode})")
        check(len(errors) == RANKS and len(set(errors)) == 1 and path in errors[0],
              f"every rank throws rank 0's error, the same text naming the path: {errors}")
        check(all(os.path.exists(os.path.join(blocked_dir, f"rank{r}.pt.trace.json")) for r in range(RANKS)),
              "each rank's own trace was written")
    guide_commands(job, merge, mpirun)
    total = passed + len(failures)
    print(f"[doctest] test cases: {total} | {passed} passed | {len(failures)} failed |")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
