#!/usr/bin/env python3
"""What including stint costs a file to compile: CPU seconds (user + system, the least of several runs)
per file for an empty file, `<iostream>`, stint's annotation header with and without STINT_DISABLE, and
the full `stint.hpp`, each opening one scope, with gcc and clang; each as a ratio to `<iostream>` from
the same run, against its target (issue 31), PASS or FAIL.

    bench/compile_cost.py                 # g++ and clang++, -O2, 5 runs each
    bench/compile_cost.py --runs 3 --compilers g++
"""
import argparse
import os
import resource
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# name, source, extra flags, target ratio to <iostream> (None: informative)
CASES = [
    ("empty file", "int main() { return 0; }\n", [], None),
    ("<iostream>", "#include <iostream>\nint main() { std::cout << 1; }\n", [], None),
    ("<stint/annotate.hpp>", '#include <stint/annotate.hpp>\nint main() { STINT_SCOPE("x"); }\n', [], 2.0),
    ("<stint/annotate.hpp>, STINT_DISABLE", '#include <stint/annotate.hpp>\nint main() { STINT_SCOPE("x"); }\n',
     ["-DSTINT_DISABLE"], 0.25),
    ("<stint/scope.hpp>", '#include <stint/scope.hpp>\nint main() { STINT_SCOPE("x"); }\n', [], None),
    ("<stint/stint.hpp>", '#include <stint/stint.hpp>\nint main() { STINT_SCOPE("x"); }\n', [], 8.0),
]


def cpu_seconds(command):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(compilers, runs, include):
    """[(compiler, case name, CPU s, ratio to <iostream>, target)] for every compiler and case."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for compiler in compilers:
            seconds = {}
            for name, source, flags, _ in CASES:
                path = os.path.join(tmp, "case.cpp")
                with open(path, "w") as f:
                    f.write(source)
                command = [compiler, "-std=c++20", "-O2", "-I", include, *flags, "-c", path, "-o",
                           os.path.join(tmp, "case.o")]
                seconds[name] = min(cpu_seconds(command) for _ in range(runs))
            base = seconds["<iostream>"]
            rows += [(compiler, name, seconds[name], seconds[name] / base, target) for name, _, _, target in CASES]
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--compilers", default="g++,clang++")
    parser.add_argument("--include", default=os.path.join(ROOT, "include"), help="stint's include folder")
    args = parser.parse_args()
    rows = measure(args.compilers.split(","), args.runs, args.include)
    failed = 0
    for compiler in args.compilers.split(","):
        print(f"\n{compiler} -O2, CPU s per file (least of {args.runs}), ratio to <iostream>")
        print("| file | CPU s | x <iostream> | target | |")
        print("| --- | --- | --- | --- | --- |")
        for _, name, seconds, ratio, target in (row for row in rows if row[0] == compiler):
            verdict = "" if target is None else ("PASS" if ratio <= target else "FAIL")
            failed += verdict == "FAIL"
            shown = "" if target is None else f"<= {target:g} x"
            print(f"| {name} | {seconds:.2f} | {ratio:.2f} | {shown} | {verdict} |")
    print(f"\ncompile cost: {failed} over target")
    return 0


if __name__ == "__main__":
    sys.exit(main())
