#!/usr/bin/env python3
"""What stint costs a file to compile: CPU seconds (user + system, the least of several runs) per file,
with gcc and clang at -O2, each as a ratio to a file that includes `<iostream>` in the same run, against
its target (issues 31 and 42), PASS or FAIL:

- the annotation header opening one scope (with and without STINT_DISABLE), and `<stint/stint.hpp>`;
- the README's example, the file a program runs its profiler from: built the separate way
  (STINT_SEPARATE_COMPILATION: declarations only), and header-only (the whole session side inline);
- the implementation unit, `<stint/impl/src.hpp>`, which a separately compiled program builds once
  (beside Tracy's whole client, TracyClient.cpp, when a Tracy checkout is found: --tracy DIR or
  $TRACY_DIR);
- the profiler file's object size and function count, both ways.

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
        ("profiler's file (README), header-only", readme, [], None, 10.0, "stint.hpp"),
        ("<stint/impl/src.hpp>, once per program", "#include <stint/impl/src.hpp>\n", SEPARATE, None, 7.5,
         "impl/src.hpp"),
    ]


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
        print(f"\n{compiler} -O2, CPU s per file (least of {args.runs}), ratio to <iostream>")
        print("| file | CPU s | x <iostream> | target | | object .text, functions |")
        print("| --- | --- | --- | --- | --- | --- |")
        src_seconds = None
        for _, name, seconds, ratio, ratio_target, seconds_target, facts in (r for r in rows if r[0] == compiler):
            shown, verdict = verdict_of(ratio, seconds, ratio_target, seconds_target)
            failed += verdict == "FAIL"
            if name.startswith("<stint/impl/src.hpp>"):
                src_seconds = seconds
            extra = f"{facts[0]} B, {facts[1]}" if facts else ""
            if name.startswith("TracyClient.cpp") and src_seconds:
                extra = f"stint's implementation unit: {src_seconds / seconds:.2f} x this"
            print(f"| {name} | {seconds:.2f} | {ratio:.2f} | {shown} | {verdict} | {extra} |")
    print(f"\ncompile cost: {failed} over target")
    return 0


if __name__ == "__main__":
    sys.exit(main())
