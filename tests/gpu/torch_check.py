#!/usr/bin/env python3
"""stint beside torch.profiler (Kineto) in one process, on the GPU check's machine (tests/gpu/check.sh
runs it). Loads the stint side (libstint_gpu_torch_side.so, from the prebuilt BIN_DIR) with ctypes and
prints one line per check, "PASS|FAIL|INFO <check>: <what was seen>":

- per-kernel cost during a session, stint's against torch.profiler's on the same workload (x.add_ on a
  small CUDA tensor, device activity only on both sides), as a ratio with a threshold: stint <= Kineto;
- one process, one after the other: torch.profiler sees its add kernels, stint its mul kernels, each
  none of the other's, and torch.profiler still works after a stint session;
- one process, overlapping either way: neither crashes, stint says in its status that it shared CUPTI,
  and both work again afterwards.

usage: torch_check.py BIN_DIR
"""
import ctypes
import os
import sys
import time

# Per launch, stint's total cost during a session over Kineto's: at most this (5 % for noise).
COST_RATIO_LIMIT = 1.05
LAUNCHES = 20000

failures = 0


def line(ok, check, detail):
    global failures
    failures += 0 if ok else 1
    print(f"{'PASS' if ok else 'FAIL'} {check}: {detail}", flush=True)


def info(check, detail):
    print(f"INFO {check}: {detail}", flush=True)


def main():
    bin_dir = sys.argv[1]
    import torch
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    if not torch.cuda.is_available():
        line(False, "torch", f"torch {torch.__version__} sees no CUDA device")
        return 1
    info("torch", f"{torch.__version__}, CUDA {torch.version.cuda}, {torch.cuda.get_device_name(0)}")
    lib = ctypes.CDLL(os.path.join(bin_dir, "libstint_gpu_torch_side.so"))
    lib.stint_torch_side_start.argtypes = [ctypes.c_int]
    lib.stint_torch_side_start.restype = ctypes.c_int
    lib.stint_torch_side_stop.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_longlong), ctypes.c_char_p,
                                          ctypes.c_int]
    lib.stint_torch_side_stop.restype = ctypes.c_longlong

    x = torch.zeros(256, device="cuda")
    y = torch.ones(256, device="cuda")
    ADD, MUL = "Functor_add", "MulFunctor"  # in the kernels' names: CUDAFunctor_add<float>, MulFunctor<float>

    def add(n):
        for _ in range(n):
            x.add_(1.0)
        torch.cuda.synchronize()

    def mul(n):
        for _ in range(n):
            y.mul_(1.0)
        torch.cuda.synchronize()

    def stint_stop(needle):
        kernels = ctypes.c_longlong(0)
        status = ctypes.create_string_buffer(2048)
        matching = lib.stint_torch_side_stop(needle.encode(), ctypes.byref(kernels), status, len(status))
        return matching, kernels.value, status.value.decode()

    def torch_kernels(prof, needle):
        names = [e.name for e in prof.events() if e.device_type == DeviceType.CUDA]
        return sum(needle in n for n in names), len(names)

    def timed(fn, n):
        t0 = time.perf_counter()
        fn(n)
        return (time.perf_counter() - t0) / n * 1e9

    add(1000)  # warm: module load, first launches
    mul(1000)

    # Cost: the loop alone, inside each profiler's session, best of 3.
    base = min(timed(add, LAUNCHES) for _ in range(3))
    kineto, stint = [], []
    for _ in range(3):
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            kineto.append(timed(add, LAUNCHES))
        lib.stint_torch_side_start(0)
        stint.append(timed(add, LAUNCHES))
        seen_stint, _, status = stint_stop(ADD)
    seen_kineto, _ = torch_kernels(prof, ADD)  # the last round's (reading events takes seconds)
    kineto, stint = min(kineto), min(stint)
    ratio = stint / kineto
    info("per-kernel cost (x.add_, 20,000 launches, best of 3, device activity only)",
         f"none {base:.0f} ns, torch.profiler {kineto:.0f} ns ({kineto - base:+.0f}), stint {stint:.0f} ns "
         f"({stint - base:+.0f}); kernels seen: torch.profiler {seen_kineto}, stint {seen_stint}; stint: {status}")
    line(ratio <= COST_RATIO_LIMIT and seen_stint >= LAUNCHES and seen_kineto >= LAUNCHES,
         "stint's per-kernel cost during a session <= torch.profiler's",
         f"{ratio:.3f} x (limit {COST_RATIO_LIMIT}); every kernel seen by each: "
         f"{seen_stint >= LAUNCHES and seen_kineto >= LAUNCHES}")

    def one_after_the_other(label):
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            add(200)
        torch_add, torch_all = torch_kernels(prof, ADD)
        lib.stint_torch_side_start(1)
        mul(200)
        stint_mul, stint_all, status = stint_stop(MUL)
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            add(200)
        again_add, again_all = torch_kernels(prof, ADD)
        ok = (torch_add >= 200 and torch_all == torch_add and stint_mul >= 200 and stint_all == stint_mul and
              again_add >= 200 and again_all == again_add and status.startswith("active"))
        line(ok, f"one process, one after the other{label}",
             f"torch.profiler {torch_add} add of {torch_all} kernels, then stint {stint_mul} mul of {stint_all}, "
             f"then torch.profiler {again_add} add of {again_all}; stint: {status}")

    one_after_the_other("")

    # stint inside torch.profiler's session: both return, stint says it shared CUPTI.
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        add(200)
        lib.stint_torch_side_start(1)
        mul(200)
        stint_mul, stint_all, status = stint_stop(MUL)
        add(200)
    torch_add, torch_all = torch_kernels(prof, ADD)
    info("stint inside torch.profiler", f"stint {stint_mul} mul of {stint_all} kernels, status: {status}; "
         f"torch.profiler {torch_add} add of {torch_all} kernels")
    line(status.startswith("active"), "stint inside torch.profiler: no crash, stint's session active", status)

    # torch.profiler inside stint's session.
    lib.stint_torch_side_start(1)
    mul(200)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        add(200)
    mul(200)
    stint_mul, stint_all, status = stint_stop(MUL)
    torch_add, torch_all = torch_kernels(prof, ADD)
    info("torch.profiler inside stint", f"stint {stint_mul} mul of {stint_all} kernels, status: {status}; "
         f"torch.profiler {torch_add} add of {torch_all} kernels")
    line(status.startswith("active"), "torch.profiler inside stint: no crash, stint's session active", status)

    one_after_the_other(", after the overlaps")
    print(f"torch check: {failures} failed", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
