#!/usr/bin/env python3
"""What stint costs a file to compile: CPU seconds (user + system, the least of several runs) per file,
with gcc and clang at -O2, each as a ratio to a file that includes `<iostream>` in the same run, against
its target (issues 31 and 42), PASS or FAIL:

- the annotation header opening one scope (with and without STINT_DISABLE), and `<stint/stint.hpp>`;
- the README's example, the file a program runs its profiler from: built the separate way
  (STINT_SEPARATE_COMPILATION: declarations only), and header-only (the whole session side inline);
- the session side, `<stint/impl/src.hpp>`, which a separately compiled program builds once, as the six
  units stint_compiled_dep and stint::compiled build (STINT_COMPILED_PART 1 to 6): their sum and the
  slowest, beside Tracy's whole client, TracyClient.cpp, when a Tracy checkout is found (--tracy DIR or
  $TRACY_DIR): the header-only README file, the sum and the slowest unit then have targets as ratios to it;
- the profiler file's object size and function count, both ways, the header-only one's code (.text)
  against its target (design §16, "pay for what you name").

    bench/compile_cost.py                       # g++ and clang++, 5 runs each
    bench/compile_cost.py --runs 3 --compilers g++
    bench/compile_cost.py --include single_include
"""
import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEPARATE = ["-DSTINT_SEPARATE_COMPILATION"]


def readme_example():
    """The README's first C++ block: a profiler, one op, one scope, the table, a Chrome trace."""
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        return re.search(r"```cpp\n(.*?)```", f.read(), re.S).group(1)


PARTS = 6  # include/stint/impl/src.hpp's STINT_COMPILED_PART
README_TEXT_TARGET = 250 * 1024  # bytes of code README's example emits header-only
TRACY_TARGETS = {  # ratio to TracyClient.cpp in the same run
    "profiler's file (README), header-only": 1.5,
    "session side, summed over its units": 3.0,
    "session side, its slowest unit": 1.0,
}


# name, source, extra flags, target ratio to <iostream>, target CPU s (None: informative), needed header
def cases():
    scope = 'int main() { STINT_SCOPE("x"); }\n'
    readme = readme_example()
    return [
        ("empty file", "int main() { return 0; }\n", [], None, None, None),
        ("<iostream>", "#include <iostream>\nint main() { std::cout << 1; }\n", [], None, None, None),
        ("<stint/annotate.hpp>", "#include <stint/annotate.hpp>\n" + scope, [], 2.0, None, "annotate.hpp"),
        ("<stint/annotate.hpp>, STINT_DISABLE", "#include <stint/annotate.hpp>\n" + scope, ["-DSTINT_DISABLE"], 0.25,
         None, "annotate.hpp"),
        ("<stint/scope.hpp>", "#include <stint/scope.hpp>\n" + scope, [], None, None, "scope.hpp"),
        ("<stint/stint.hpp>, separate", "#include <stint/stint.hpp>\n" + scope, SEPARATE, 2.5, None, "stint.hpp"),
        ("profiler's file (README), separate", readme, SEPARATE, 2.5, None, "stint.hpp"),
        ("profiler's file (README), header-only", readme, [], 40.0, None, "stint.hpp"),
    ] + [(f"session side, unit {part} of {PARTS}", "#include <stint/impl/src.hpp>\n",
          SEPARATE + [f"-DSTINT_COMPILED_PART={part}"], None, None, "impl/src.hpp") for part in range(1, PARTS + 1)]


def cpu_seconds(command):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def object_facts(path):
    """(text bytes, functions defined) of an object file."""
    size = subprocess.run(["size", "-A", path], check=True, capture_output=True, text=True).stdout
    text = sum(int(line.split()[1]) for line in size.splitlines() if line.startswith(".text"))
    symbols = subprocess.run(["nm", "--defined-only", path], check=True, capture_output=True, text=True).stdout
    functions = sum(1 for line in symbols.splitlines() if line.split()[-2:-1] and line.split()[-2] in "TtWw")
    return text, functions


def tracy_client(tracy_dir):
    """TracyClient.cpp of a Tracy checkout, or None."""
    if not tracy_dir:
        return None
    path = os.path.join(tracy_dir, "public", "TracyClient.cpp")
    return path if os.path.isfile(path) else None


def measure(compilers, runs, include, tracy_dir=None):
    """[(compiler, case name, CPU s, ratio to <iostream>, target ratio, target s, object facts)]."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for compiler in compilers:
            seconds, facts, targets = {}, {}, []
            for name, source, flags, ratio_target, seconds_target, needs in cases():
                if needs is not None and not os.path.isfile(os.path.join(include, "stint", needs)):
                    continue  # e.g. single_include has no <stint/scope.hpp>
                path = os.path.join(tmp, "case.cpp")
                with open(path, "w") as f:
                    f.write(source)
                obj = os.path.join(tmp, "case.o")
                command = [compiler, "-std=c++20", "-O2", "-I", include, *flags, "-c", path, "-o", obj]
                seconds[name] = min(cpu_seconds(command) for _ in range(runs))
                facts[name] = object_facts(obj) if name.startswith("profiler's file") else None
                targets.append((name, ratio_target, seconds_target))
            client = tracy_client(tracy_dir)
            if client is not None:
                name = "TracyClient.cpp (Tracy's whole client, once per program)"
                command = [compiler, "-std=c++17", "-O2", "-DTRACY_ENABLE", "-c", client, "-o",
                           os.path.join(tmp, "tracy.o")]
                try:
                    seconds[name] = min(cpu_seconds(command) for _ in range(runs))
                    facts[name] = None
                    targets.append((name, None, None))
                except subprocess.CalledProcessError:
                    print(f"{compiler}: {client} did not compile; its row is left out", file=sys.stderr)
            units = [seconds[n] for n in seconds if n.startswith("session side, unit")]
            if units:
                for name, value in (("session side, summed over its units", sum(units)),
                                    ("session side, its slowest unit", max(units))):
                    seconds[name], facts[name] = value, None
                    targets.append((name, None, None))
            base = seconds["<iostream>"]
            rows += [(compiler, name, seconds[name], seconds[name] / base, ratio_target, seconds_target, facts[name])
                     for name, ratio_target, seconds_target in targets]
    return rows


def verdict_of(ratio, seconds, ratio_target, seconds_target):
    if ratio_target is None and seconds_target is None:
        return "", ""
    ok = (ratio_target is None or ratio <= ratio_target) and (seconds_target is None or seconds <= seconds_target)
    shown = f"<= {ratio_target:g} x" if ratio_target is not None else f"<= {seconds_target:g} s"
    return shown, "PASS" if ok else "FAIL"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--compilers", default="g++,clang++")
    parser.add_argument("--include", default=os.path.join(ROOT, "include"), help="stint's include folder")
    parser.add_argument("--tracy", default=os.environ.get("TRACY_DIR", ""), help="a checkout of wolfpld/tracy")
    args = parser.parse_args()
    include = os.path.abspath(args.include)
    rows = measure(args.compilers.split(","), args.runs, include, args.tracy)
    failed = 0
    for compiler in args.compilers.split(","):
        mine = [r for r in rows if r[0] == compiler]
        tracy = next((r[2] for r in mine if r[1].startswith("TracyClient.cpp")), None)
        print(f"\n{compiler} -O2, CPU s per file (least of {args.runs}), ratio to <iostream>"
              + (", and to TracyClient.cpp" if tracy else ""))
        print("| file | CPU s | x <iostream> | x TracyClient.cpp | target | | object .text, functions |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for _, name, seconds, ratio, ratio_target, seconds_target, facts in mine:
            shown, verdict = verdict_of(ratio, seconds, ratio_target, seconds_target)
            versus = ""
            if tracy and not name.startswith("TracyClient.cpp"):
                versus = f"{seconds / tracy:.2f}"
                if name in TRACY_TARGETS:
                    ok = seconds / tracy <= TRACY_TARGETS[name] and verdict != "FAIL"
                    shown = ", ".join(t for t in (shown, f"<= {TRACY_TARGETS[name]:g} x Tracy") if t)
                    verdict = "PASS" if ok else "FAIL"
            failed += verdict == "FAIL"
            extra = f"{facts[0]} B, {facts[1]}" if facts else ""
            print(f"| {name} | {seconds:.2f} | {ratio:.2f} | {versus} | {shown} | {verdict} | {extra} |")
            if name == "profiler's file (README), header-only" and facts:
                ok = facts[0] <= README_TEXT_TARGET
                failed += not ok
                print(f"| its code (.text) | {facts[0] / 1024:.0f} KB | | | <= {README_TEXT_TARGET // 1024} KB | "
                      f"{'PASS' if ok else 'FAIL'} | |")
    print(f"\ncompile cost: {failed} over target")
    return 0


if __name__ == "__main__":
    sys.exit(main())
