#!/usr/bin/env python3
"""Compiles a file that must not compile and checks that the compiler's output has each text the file
names on a `// expect: TEXT` line and none of those on a `// reject: TEXT` line. Prints a doctest-style
summary so tools/run_tests.py counts it.

usage: run.py FILE INCLUDE_DIR COMPILER [ARGS...]
"""
import subprocess
import sys


def main() -> int:
    source, include, *compiler = sys.argv[1:]
    expected = [line.split("// expect:", 1)[1].strip() for line in open(source, encoding="utf-8")
                if line.startswith("// expect:")]
    rejected = [line.split("// reject:", 1)[1].strip() for line in open(source, encoding="utf-8")
                if line.startswith("// reject:")]
    run = subprocess.run(compiler + ["-fsyntax-only", "-I", include, source], capture_output=True, text=True)
    output = run.stdout + run.stderr
    problems = []
    if run.returncode == 0:
        problems.append("it compiled")
    problems += [f"the diagnostic lacks: {text}" for text in expected if text not in output]
    problems += [f"the diagnostic has: {text}" for text in rejected if text in output]
    for problem in problems:
        print(f"{source}: {problem}")
    if problems:
        print(output[-4000:])
    failed = 1 if problems else 0
    print(f"[doctest] test cases: 1 | {1 - failed} passed | {failed} failed |")
    return failed


if __name__ == "__main__":
    sys.exit(main())
