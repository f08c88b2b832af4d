#!/usr/bin/env python3
"""Separate compilation's misuse fails loudly (include/stint/detail/separate_compilation.hpp):
1. a program built with STINT_SEPARATE_COMPILATION that never compiles <stint/impl/src.hpp> fails to
   link, and the error names that header;
2. a program that mixes a header-only file with a separately compiled one, sharing a profiler, fails
   to link, and the error names the build namespaces (header_only, compiled);
3. <stint/impl/src.hpp> in a header-only build stops at its #error, which says what to do;
4. and the default still holds: the README's example, one file with one include and no define, builds,
   links with nothing else and prints its table.
Prints a doctest-style summary so tools/run_tests.py counts it.

usage: run.py INCLUDE_DIR COMPILER [ARGS...]
"""
import pathlib
import re
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent


def run(command: list) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True)


def main() -> int:
    include, *compiler = sys.argv[1:]
    common = compiler + ["-std=c++20", "-O0", "-I", include]
    libs = ["-lfmt", "-lz", "-lpthread", "-ldl"]
    problems = []
    cases = 0
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp)
        # 1. No implementation file.
        cases += 1
        obj = out / "consumer.o"
        built = run(common + ["-DSTINT_SEPARATE_COMPILATION", "-c", str(HERE.parent / "consumers" / "consumer.cpp"),
                              "-o", str(obj)])
        if built.returncode != 0:
            problems.append("consumer.cpp did not compile with STINT_SEPARATE_COMPILATION:\n" + built.stderr[-3000:])
        else:
            linked = run(compiler + [str(obj), "-o", str(out / "consumer")] + libs)
            if linked.returncode == 0:
                problems.append("a program without <stint/impl/src.hpp> linked")
            elif "stint_impl_src_hpp_must_be_included_in_one_file" not in linked.stderr:
                problems.append("the link error does not name <stint/impl/src.hpp>:\n" + linked.stderr[-3000:])
        # 2. Header-only and separate files sharing a profiler.
        cases += 1
        header_only = run(common + ["-c", str(HERE / "mixed_header_only.cpp"), "-o", str(out / "a.o")])
        separate = run(common + ["-DSTINT_SEPARATE_COMPILATION", "-c", str(HERE / "mixed_separate.cpp"),
                                 "-o", str(out / "b.o")])
        if header_only.returncode != 0 or separate.returncode != 0:
            problems.append("the mixed program's files did not compile:\n" + header_only.stderr[-2000:] +
                            separate.stderr[-2000:])
        else:
            linked = run(compiler + [str(out / "a.o"), str(out / "b.o"), "-o", str(out / "mixed")] + libs)
            if linked.returncode == 0:
                problems.append("a program mixing header-only and separately compiled files linked")
            elif "stint::compiled::profiler" not in linked.stderr:
                problems.append("the link error does not name the build namespace:\n" + linked.stderr[-3000:])
        # 3. impl/src.hpp without the define.
        cases += 1
        source = out / "src_header_only.cpp"
        source.write_text("#include <stint/impl/src.hpp>\n")
        compiled = run(common + ["-fsyntax-only", str(source)])
        if compiled.returncode == 0:
            problems.append("<stint/impl/src.hpp> compiled without STINT_SEPARATE_COMPILATION")
        elif "define STINT_SEPARATE_COMPILATION in every file" not in compiled.stderr:
            problems.append("<stint/impl/src.hpp>'s error does not say what to do:\n" + compiled.stderr[-2000:])
        # 4. One file, header-only.
        cases += 1
        readme = (HERE.parent.parent / "README.md").read_text(encoding="utf-8")
        example = out / "readme_example.cpp"
        example.write_text(re.search(r"```cpp\n(.*?)```", readme, re.S).group(1))
        built = run(common + [str(example), "-o", str(out / "readme_example")] + libs)
        if built.returncode != 0:
            problems.append("the README's example did not build header-only:\n" + built.stderr[-3000:])
        else:
            ran = subprocess.run([str(out / "readme_example")], cwd=tmp, capture_output=True, text=True)
            if ran.returncode != 0 or "blas::gemm" not in ran.stdout or not (out / "run.pt.trace.json").is_file():
                problems.append(f"the README's example did not print its table and write its trace (exit {ran.returncode}):\n"
                                + ran.stdout[-2000:] + ran.stderr[-2000:])
    for problem in problems:
        print(problem)
    failed = min(len(problems), cases)
    print(f"[doctest] test cases: {cases} | {cases - failed} passed | {failed} failed |")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
