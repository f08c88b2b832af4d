#!/usr/bin/env python3
"""Compiles every ```cpp block of README.md, so that what a newcomer copies compiles.

A block that starts with `#include` is a complete program: it is compiled and linked against include/
with no help, and run in a temporary directory when it has a main(). Any other block is a sketch: it is
checked with -fsyntax-only after tests/readme_prelude.hpp, which declares the placeholders sketches use
(Tensor, train_step(), ...). Each block is one test case; the last line is doctest's summary, so
tools/run_tests.py counts the blocks.

usage: tools/check_readme.py README INCLUDE_DIR PRELUDE COMPILER [ARGS...]
"""
import pathlib
import re
import shlex
import subprocess
import sys
import tempfile

BLOCK = re.compile(r"^```cpp\n(.*?)^```$", re.S | re.M)
FLAGS = ["-std=c++20", "-Wall", "-Wextra", "-Wpedantic", "-Werror"]


def link_flags():
    run = subprocess.run(["pkg-config", "--libs", "fmt", "zlib"], capture_output=True, text=True)
    return (shlex.split(run.stdout) if run.returncode == 0 else ["-lfmt", "-lz"]) + ["-pthread"]


def check(number, line, code, include, prelude, compiler, work):
    source = work / f"readme_block_{number}.cpp"
    source.write_text(code, encoding="utf-8")
    complete = code.lstrip().startswith("#include")
    if complete:
        binary = work / f"readme_block_{number}"
        steps = [compiler + FLAGS + ["-I", include, str(source), "-o", str(binary)] + link_flags()]
        if re.search(r"\bint main\s*\(", code):
            steps.append([str(binary)])
    else:
        steps = [compiler + FLAGS + ["-fsyntax-only", "-I", include, "-include", prelude, str(source)]]
    for step in steps:
        run = subprocess.run(step, cwd=work, capture_output=True, text=True, errors="replace", timeout=600)
        if run.returncode != 0:
            kind = "complete program" if complete else "sketch (with the prelude)"
            print(f"README.md:{line}: block {number}, a {kind}, fails: {shlex.join(step)}")
            print((run.stdout + run.stderr)[-4000:])
            return False
    print(f"README.md:{line}: block {number} ok ({'compiled, linked and run' if complete else 'syntax checked'})")
    return True


def main() -> int:
    readme, include, prelude, *compiler = sys.argv[1:]
    include, prelude = str(pathlib.Path(include).resolve()), str(pathlib.Path(prelude).resolve())
    text = pathlib.Path(readme).read_text(encoding="utf-8")
    blocks = [(text.count("\n", 0, m.start()) + 2, m.group(1)) for m in BLOCK.finditer(text)]
    failed = 0
    with tempfile.TemporaryDirectory(prefix="stint-readme-") as tmp:
        for number, (line, code) in enumerate(blocks, 1):
            failed += not check(number, line, code, include, prelude, compiler, pathlib.Path(tmp))
    if not blocks:
        print(f"{readme}: no ```cpp blocks found")
        failed = 1
    total = max(len(blocks), 1)
    print(f"[doctest] test cases: {total} | {total - failed} passed | {failed} failed |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
