#!/usr/bin/env python3
"""A deterministic guard against compile cost creeping back (timings are noisy; bench/compile_cost.py
times them): the functions the compiler emits at -O2 for two files, against committed ceilings
(ceilings.json, per compiler family):

- a framework's file: `#include <stint/annotate.hpp>` and one scope (what every file of a framework that
  embeds stint pays);
- the file a program runs its profiler from (the README's example), built the separate way: its
  session side is declarations only, so what it emits is the recording side and thin forwarders;
- the README's example header-only: the bytes of code (.text sections) it emits, against a ceiling, and
  none of the features it does not name (design §16, "pay for what you name"): no flight recorder,
  crash dump, streaming writer, Perfetto writer, execution trace, call-stack or module builder.

A count above its ceiling fails and says which functions the file emits, so the change that brought them
shows. A count well under its ceiling is reported, so the ceiling can come down with the code.
Prints a doctest-style summary so tools/run_tests.py counts it.

usage: run.py ROOT COMPILER [ARGS...]
"""
import json
import pathlib
import re
import subprocess
import sys
import tempfile


def family(compiler: list) -> str:
    version = subprocess.run(compiler + ["--version"], capture_output=True, text=True).stdout
    return "clang" if "clang" in version else "gcc"


# What README's example must not emit: the features it does not name, by their functions' names.
NOT_NAMED = {
    # The core keeps a flight recorder's summary (flight_window_summary) and calls an attached observer's
    # inline release(): neither is the feature's code.
    "flight recorder": re.compile(r"flight_mode|flight_window::|hang_watchdog|write_flight_dump"),
    "crash dump": re.compile(r"crash_dump::"),
    "streaming writer": re.compile(r"trace_stream::"),
    "Perfetto writer": re.compile(r"perfetto_writer|write_perfetto_trace"),
    "execution trace": re.compile(r"execution_trace_writer|execution_trace_observer::\w+_(now|locked)\b"),
    "call stacks, module paths": re.compile(r"assign_call_stacks|assign_module_hierarchy|native_symbolizer"),
}


def compile_object(compiler: list, include: pathlib.Path, source: str, flags: list, tmp: pathlib.Path) -> pathlib.Path:
    path = tmp / "case.cpp"
    path.write_text(source)
    obj = tmp / "case.o"
    subprocess.run(compiler + ["-std=c++20", "-O2", "-I", str(include), *flags, "-c", str(path), "-o", str(obj)],
                   check=True, capture_output=True, text=True)
    return obj


def functions(obj: pathlib.Path) -> list:
    symbols = subprocess.run(["nm", "-C", "--defined-only", str(obj)], check=True, capture_output=True,
                             text=True).stdout
    return sorted(line.split(" ", 2)[2] for line in symbols.splitlines() if line.split(" ")[1:2] and
                  line.split(" ")[1] in ("T", "t", "W", "w"))


def text_bytes(obj: pathlib.Path) -> int:
    sections = subprocess.run(["size", "-A", str(obj)], check=True, capture_output=True, text=True).stdout
    return sum(int(line.split()[1]) for line in sections.splitlines() if line.startswith(".text"))


def main() -> int:
    root = pathlib.Path(sys.argv[1])
    compiler = sys.argv[2:]
    readme = re.search(r"```cpp\n(.*?)```", (root / "README.md").read_text(encoding="utf-8"), re.S).group(1)
    files = {
        "annotate.hpp, one scope": ('#include <stint/annotate.hpp>\nvoid f() { STINT_SCOPE("x"); }\n', []),
        "the profiler's file (README), separate": (readme, ["-DSTINT_SEPARATE_COMPILATION"]),
    }
    ceilings = json.loads((pathlib.Path(__file__).parent / "ceilings.json").read_text())[family(compiler)]
    failed = 0
    cases = len(files) + 2
    with tempfile.TemporaryDirectory() as tmp:
        for name, (source, flags) in files.items():
            emitted = functions(compile_object(compiler, root / "include", source, flags, pathlib.Path(tmp)))
            ceiling = ceilings[name]
            print(f"{name}: {len(emitted)} functions (ceiling {ceiling})")
            if len(emitted) > ceiling:
                failed += 1
                print(f"  over the ceiling: the file emits\n    " + "\n    ".join(emitted))
            elif len(emitted) < ceiling * 0.8:
                print(f"  well under the ceiling: lower it in tests/compile_guard/ceilings.json to {len(emitted)}")
        name = "the profiler's file (README), header-only, code bytes"
        obj = compile_object(compiler, root / "include", readme, [], pathlib.Path(tmp))
        size, ceiling = text_bytes(obj), ceilings[name]
        print(f"{name}: {size} bytes of .text (ceiling {ceiling})")
        if size > ceiling:
            failed += 1
            print("  over the ceiling: the largest functions it emits are")
            sizes = subprocess.run(["nm", "-C", "--defined-only", "--size-sort", "-S", str(obj)], check=True,
                                   capture_output=True, text=True).stdout.splitlines()
            print("    " + "\n    ".join(line.split(" ", 3)[-1] for line in sizes[-20:]))
        elif size < ceiling * 0.9:
            print(f"  well under the ceiling: lower it in tests/compile_guard/ceilings.json to {size}")
        leaks = {feature: [f for f in functions(obj) if pattern.search(f)] for feature, pattern in NOT_NAMED.items()}
        leaks = {feature: found for feature, found in leaks.items() if found}
        print(f"README's example header-only emits no feature it does not name: {'no' if leaks else 'yes'}")
        if leaks:
            failed += 1
            for feature, found in leaks.items():
                print(f"  {feature}: " + ", ".join(found[:5]))
    print(f"[doctest] test cases: {cases} | {cases - failed} passed | {failed} failed |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
