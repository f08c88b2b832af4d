#!/usr/bin/env python3
"""tools/stint-merge on hand-written per-rank traces: Kineto's shape (no clock offsets: each file keeps
its wall clock), stint's (offsets and drift applied exactly), and bad input (refused, nothing written).

usage: run.py STINT_MERGE
Ends with doctest's summary line, which tools/run_tests.py counts.
"""
import gzip
import json
import os
import subprocess
import sys
import tempfile

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


def kineto_rank(rank, base_ns, host_pid):
    """A torch.profiler trace of one rank: a CPU op launching a kernel on GPU 0 (pid 0), an ac2g flow."""
    return {
        "schemaVersion": 1,
        "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2},
        "traceEvents": [
            {"name": "process_name", "ph": "M", "ts": 0, "pid": host_pid, "tid": 0, "args": {"name": "python3"}},
            {"name": "process_name", "ph": "M", "ts": 0, "pid": 0, "tid": 0, "args": {"name": "python3"}},
            {"name": "process_labels", "ph": "M", "ts": 0, "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}},
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": host_pid, "tid": host_pid, "ts": 100.5,
             "dur": 10.25, "args": {"External id": 3}},
            {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 105.125, "dur": 3.0,
             "args": {"correlation": 17}},
            {"ph": "s", "id": 17, "pid": host_pid, "tid": host_pid, "ts": 101.0, "cat": "ac2g", "name": "ac2g"},
            {"ph": "f", "id": 17, "pid": 0, "tid": 7, "ts": 105.125, "cat": "ac2g", "name": "ac2g", "bp": "e"},
        ],
        "baseTimeNanoseconds": base_ns,
    }


def stint_rank(rank, base_ns, clock):
    info = {"backend": "mpi", "rank": rank, "world_size": 2}
    info.update(clock)
    return {
        "schemaVersion": 1,
        "distributedInfo": info,
        "stint": {"version": "0.1.0", "recorded": 2, "dropped": rank, "late": 0},
        "traceEvents": [
            {"name": "process_name", "ph": "M", "ts": 0, "pid": 900 + rank, "tid": 0, "args": {"name": "stint"}},
            {"ph": "X", "cat": "user_annotation", "name": "early", "pid": 900 + rank, "tid": 1, "ts": 0.0,
             "dur": 1.0},
            {"ph": "X", "cat": "user_annotation", "name": "late", "pid": 900 + rank, "tid": 1, "ts": 1000000.0,
             "dur": 1.0},
        ],
        "baseTimeNanoseconds": base_ns,
    }


def write(path, trace):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "wt") as f:
        json.dump(trace, f)


def read(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def merge(tool, *args):
    return subprocess.run([sys.executable, tool, *args], capture_output=True, text=True)


def timed(trace, name):
    return [e for e in trace["traceEvents"] if e.get("name") == name and e.get("ph") == "X"]


def main():
    tool = sys.argv[1]
    with tempfile.TemporaryDirectory() as d:
        # Kineto's shape: rank 1's clock started 50 us after rank 0's; no offsets recorded.
        r0, r1 = os.path.join(d, "k0.json"), os.path.join(d, "k1.json.gz")
        write(r0, kineto_rank(0, 1_000_000_000_000, 4242))
        write(r1, kineto_rank(1, 1_000_000_050_000, 5151))
        out = os.path.join(d, "kineto_job.json")
        run = merge(tool, r1, r0, "-o", out)  # order on the command line does not decide: the ranks do
        check(run.returncode == 0, f"Kineto-shaped ranks merge: {run.stderr.strip()!r}")
        check(run.stdout.count("kept on its own wall clock (no clock offset recorded)") == 2,
              f"it says each file kept its wall clock: {run.stdout.strip()!r}")
        job = read(out)
        names = {e["pid"]: e["args"]["name"] for e in job["traceEvents"] if e.get("name") == "process_name"}
        check(names == {0: "rank 0", 1: "rank 1", 1_000_000: "rank 0 python3", 1_001_000: "rank 1 python3"},
              f"host processes become pids 0 and 1, GPUs pids of their own: {names}")
        mm = sorted(timed(job, "aten::mm"), key=lambda e: e["pid"])
        check([(e["pid"], e["ts"], e["dur"]) for e in mm] == [(0, 100.5, 10.25), (1, 150.5, 10.25)],
              f"rank 1's ops sit 50 us later on rank 0's timeline, durations kept: {mm}")
        kernels = sorted(timed(job, "gemm"), key=lambda e: e["pid"])
        check([(e["pid"], e["tid"], e["ts"]) for e in kernels] == [(1_000_000, 7, 105.125), (1_001_000, 7, 155.125)],
              f"kernels stay on their streams, under their rank's GPU: {kernels}")
        flows = sorted((e["id"], e["ph"], e["pid"]) for e in job["traceEvents"] if e.get("cat") == "ac2g")
        check(flows == [(17, "f", 1_000_000), (17, "s", 0), (17 + (1 << 40), "f", 1_001_000), (17 + (1 << 40), "s", 1)],
              f"each rank's flows keep their ends and never link to another rank's: {flows}")
        check(job["distributedInfo"]["world_size"] == 2 and job["baseTimeNanoseconds"] == 1_000_000_000_000,
              "the merged trace is on rank 0's base time, world size 2")

        # stint's shape with an alignment: rank 1's wall clock reads 2 ms ahead and runs 1 ppm fast.
        s0, s1 = os.path.join(d, "s0.json"), os.path.join(d, "s1.json")
        base = 1_700_000_000_000_000_000
        write(s0, stint_rank(0, base, {"clock_offset_ns": 0, "clock_error_ns": 0, "clock_drift_ppb": 0.0,
                                       "clock_reference_ns": base}))
        write(s1, stint_rank(1, base + 2_000_000, {"clock_offset_ns": -2_000_000, "clock_error_ns": 700,
                                                   "clock_drift_ppb": -1000.0, "clock_reference_ns": base + 2_000_000}))
        out = os.path.join(d, "stint_job.json.gz")
        run = merge(tool, s0, s1, "-o", out)
        check(run.returncode == 0 and "moved by -2000.000 us (drift -1000.0 ppb, error bound 0.700 us)" in run.stdout,
              f"stint's ranks merge, saying the offset applied: {run.stdout.strip()!r} {run.stderr.strip()!r}")
        job = read(out)
        early = {e["pid"]: e["ts"] for e in timed(job, "early")}
        late = {e["pid"]: e["ts"] for e in timed(job, "late")}
        check(early == {0: 0.0, 1: 0.0}, f"the offset cancels the 2 ms its wall clock was ahead: {early}")
        check(late == {0: 1_000_000.0, 1: 999_999.0}, f"1 s later, 1 ppm of drift is 1 us: {late}")
        block = job["stint"]
        check(block["recorded"] == 4 and block["dropped"] == 1 and [r["rank"] for r in block["ranks"]] == [0, 1]
              and block["ranks"][1]["stint"]["dropped"] == 1 and job["distributedInfo"]["clock_error_ns"] == 700,
              f"every rank's counts are kept and summed, the worst error bound reported: {block}")
        run = merge(tool, "--no-align", s0, s1, "-o", out)
        late = {e["pid"]: e["ts"] for e in timed(read(out), "late")}
        check(run.returncode == 0 and "(--no-align)" in run.stdout and late == {0: 1_000_000.0, 1: 1_002_000.0},
              f"--no-align keeps each wall clock: {late}")

        # Files without distributedInfo take their place on the command line as their rank.
        plain = kineto_rank(0, 0, 77)
        del plain["distributedInfo"]
        p0, p1 = os.path.join(d, "p0.json"), os.path.join(d, "p1.json")
        write(p0, plain)
        write(p1, plain)
        run = merge(tool, p0, p1, "-o", os.path.join(d, "plain.json"))
        check(run.returncode == 0 and run.stdout.count("rank from its place on the command line") == 2,
              f"ranks from the command line, said so: {run.stdout.strip()!r}")

        # Bad input: refused with a message, exit 2, nothing written.
        bad = os.path.join(d, "bad.json")
        with open(bad, "w") as f:
            f.write('{"traceEvents": [')
        target = os.path.join(d, "never.json")
        for args, expect in [([r0, r0], "are both rank 0"), ([bad], "not a JSON trace"),
                             ([os.path.join(d, "missing.json")], "cannot read"),
                             ([r0, "-o", os.path.join(d, "no", "dir.json")], "cannot write")]:
            run = merge(tool, *args, *([] if "-o" in args else ["-o", target]))
            check(run.returncode == 2 and expect in run.stderr and not os.path.exists(target),
                  f"{expect}: exit {run.returncode}, {run.stderr.strip()!r}, nothing written")
        check(not [n for n in os.listdir(d) if n.startswith(".stint-merge.")], "no temporary file is left behind")
    total = passed + len(failures)
    print(f"[doctest] test cases: {total} | {passed} passed | {len(failures)} failed |")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
