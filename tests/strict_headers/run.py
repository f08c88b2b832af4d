#!/usr/bin/env python3
"""stint's public headers compile clean in a user's strict build: a file that includes every public
header (each header outside detail/ and impl/), compiled with -Wall -Wextra -Wpedantic -Wshadow
-Wconversion -Wsign-conversion -Wold-style-cast -Werror, by g++ and by clang++, from include/ and from
single_include/, header-only (the default a user meets) and the separate way (STINT_SEPARATE_COMPILATION,
with <stint/impl/src.hpp> in the same file, as the one implementation file compiles it): every declaration
and every body is seen by both compilers.

Cheap by design: one file per (tree, build way, compiler), -fsyntax-only (the warnings come from the
front end), all of them at once on every core: include/ header-only, single_include/ the separate way. A header that needs what this machine lacks (CUDA's
<cupti.h>, NVTX, libtorch) is included under `__has_include` of what it needs; stint's libtorch adapter
also needs NDEBUG and libtorch's own flags, and tests/torch builds it.
Prints a doctest-style summary so tools/run_tests.py counts it.

usage: run.py SOURCE_ROOT
"""
import concurrent.futures
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

FLAGS = ["-std=c++20", "-fsyntax-only", "-Wall", "-Wextra", "-Wpedantic", "-Wshadow", "-Wconversion",
         "-Wsign-conversion", "-Wold-style-cast", "-Werror"]
# Third-party headers a user may lack: a stint header that reaches one is included only where it is found.
OPTIONAL = ("cuda.h", "cupti.h", "nvtx3/nvToolsExt.h", "mpi.h", "torch/", "ATen/", "c10/")
LOCAL = re.compile(r'^\s*#\s*include\s+"(stint/[^"]+)"', re.M)
SYSTEM = re.compile(r"^\s*#\s*include\s+<([^>]+)>", re.M)


def needs(include: pathlib.Path, header: str, seen: set) -> set:
    """The optional third-party headers `header` reaches through stint's own includes (bodies too)."""
    if header in seen or not (include / header).is_file():
        return set()
    seen.add(header)
    text = (include / header).read_text(encoding="utf-8")
    found = {h for h in SYSTEM.findall(text) if h.startswith(OPTIONAL)}
    for local in LOCAL.findall(text):
        found |= needs(include, local, seen)
    return found


def user_file(include: pathlib.Path, headers: list, separate: bool) -> str:
    lines = ["// A user's file: every public header of stint, built with strict warnings."]
    if separate:
        lines.append("#define STINT_SEPARATE_COMPILATION 1")
    for header in headers:
        optional = sorted(needs(include, header, set()))
        if header == "stint/adapters/torch.hpp":
            continue  # libtorch's own flags and NDEBUG: tests/torch builds it
        if optional:
            lines.append("#if " + " && ".join(f"__has_include(<{h}>)" for h in optional))
        lines.append(f"#include <{header}>")
        if optional:
            lines.append("#endif")
    if separate:
        lines.append("#include <stint/impl/src.hpp>")
    lines.append("int main() { return 0; }")
    return "\n".join(lines) + "\n"


def main() -> int:
    root = pathlib.Path(sys.argv[1]).resolve()
    trees = {}
    include = root / "include"
    trees["include"] = (include, sorted(str(p.relative_to(include)) for p in (include / "stint").rglob("*.hpp")
                                        if "detail" not in p.parts and "impl" not in p.parts))
    single = root / "single_include"
    trees["single_include"] = (single, sorted(str(p.relative_to(single)) for p in (single / "stint").rglob("*.hpp")
                                              if "impl" not in p.parts))
    compilers = ["g++", "clang++"]
    problems = []
    for compiler in compilers:
        if shutil.which(compiler) is None:
            problems.append(f"{compiler} is not installed: the strict-warning check needs both g++ and clang++")
    jobs = []
    with tempfile.TemporaryDirectory() as tmp:
        for tree, (folder, headers) in trees.items():
            # include/ header-only (the way a user meets it), single_include/ the separate way with its
            # implementation file: every header and every body, once per compiler (the other two
            # combinations see the same text).
            for separate in ((False,) if tree == "include" else (True,)):
                name = f"{tree}_{'separate' if separate else 'header_only'}.cpp"
                source = pathlib.Path(tmp) / name
                source.write_text(user_file(folder, headers, separate), encoding="utf-8")
                for compiler in compilers:
                    if shutil.which(compiler) is not None:
                        jobs.append((f"{compiler} {name} ({len(headers)} headers)",
                                     [compiler, *FLAGS, "-I", str(folder), str(source)]))
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            results = list(pool.map(lambda job: (job[0], subprocess.run(job[1], capture_output=True, text=True)), jobs))
    for label, result in results:
        if result.returncode != 0:
            problems.append(f"{label}: warns or fails under strict flags:\n{result.stderr[-6000:]}")
        else:
            print(f"ok: {label}")
    for problem in problems:
        print(problem)
    cases = len(jobs) + sum(1 for p in problems if "is not installed" in p)
    print(f"[doctest] test cases: {cases} | {cases - len(problems)} passed | {len(problems)} failed |")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
