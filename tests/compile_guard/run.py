#!/usr/bin/env python3
"""A deterministic guard against compile cost creeping back (timings are noisy; bench/compile_cost.py
times them): the functions the compiler emits at -O2 for two files, against committed ceilings
(ceilings.json, per compiler family):

- a framework's file: `#include <stint/annotate.hpp>` and one scope (what every file of a framework that
  embeds stint pays);
- the file a program runs its profiler from (the README's example), built the separate way: its
  session side is declarations only, so what it emits is the recording side and thin forwarders.

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


def functions(compiler: list, include: pathlib.Path, source: str, flags: list, tmp: pathlib.Path) -> list:
    path = tmp / "case.cpp"
    path.write_text(source)
    obj = tmp / "case.o"
    subprocess.run(compiler + ["-std=c++20", "-O2", "-I", str(include), *flags, "-c", str(path), "-o", str(obj)],
                   check=True, capture_output=True, text=True)
    symbols = subprocess.run(["nm", "-C", "--defined-only", str(obj)], check=True, capture_output=True,
                             text=True).stdout
    return sorted(line.split(" ", 2)[2] for line in symbols.splitlines() if line.split(" ")[1:2] and
                  line.split(" ")[1] in ("T", "t", "W", "w"))


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
    with tempfile.TemporaryDirectory() as tmp:
        for name, (source, flags) in files.items():
            emitted = functions(compiler, root / "include", source, flags, pathlib.Path(tmp))
            ceiling = ceilings[name]
            print(f"{name}: {len(emitted)} functions (ceiling {ceiling})")
            if len(emitted) > ceiling:
                failed += 1
                print(f"  over the ceiling: the file emits\n    " + "\n    ".join(emitted))
            elif len(emitted) < ceiling * 0.8:
                print(f"  well under the ceiling: lower it in tests/compile_guard/ceilings.json to {len(emitted)}")
    print(f"[doctest] test cases: {len(files)} | {len(files) - failed} passed | {failed} failed |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
