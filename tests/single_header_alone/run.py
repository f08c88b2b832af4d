#!/usr/bin/env python3
"""The single header copied alone builds as the guide says: single_include/stint/ is copied into an
empty folder with the README's first program as app.cpp, and the `g++ ... app.cpp ...` line of the sh
block in docs/guide/01-first-profile.md that follows "copy `single_include/stint/`" is run there as
written (fmt header-only: no -lfmt), then the program, which must write its trace. The last line is
doctest's summary, so tools/run_tests.py counts the case.

usage: run.py SOURCE_ROOT
"""
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import tempfile


def main() -> int:
    root = pathlib.Path(sys.argv[1]).resolve()
    guide = (root / "docs" / "guide" / "01-first-profile.md").read_text(encoding="utf-8")
    after = guide[guide.index("copy `single_include/stint/`"):]
    block = re.search(r"```sh\n(.*?)```", after, re.S).group(1)
    line = next(l.strip() for l in block.splitlines() if "app.cpp" in l)
    program = re.search(r"```cpp\n(.*?)```", (root / "README.md").read_text(encoding="utf-8"), re.S).group(1)
    problems = []
    with tempfile.TemporaryDirectory(prefix="stint-single-alone-") as tmp:
        work = pathlib.Path(tmp)
        shutil.copytree(root / "single_include" / "stint", work / "stint")
        (work / "app.cpp").write_text(program, encoding="utf-8")
        build = subprocess.run(shlex.split(line), cwd=work, capture_output=True, text=True, timeout=900)
        if build.returncode != 0:
            problems.append(f"the documented line failed: {line}\n{(build.stdout + build.stderr)[-4000:]}")
        else:
            run = subprocess.run(["./app"], cwd=work, capture_output=True, text=True, timeout=120)
            if run.returncode != 0 or not (work / "run.pt.trace.json").is_file():
                problems.append(f"./app failed ({run.returncode}) or wrote no trace:\n{run.stdout}{run.stderr}")
    for problem in problems:
        print(problem)
    failed = 1 if problems else 0
    print(f"ok: {line}" if not failed else "FAILED")
    print(f"[doctest] test cases: 1 | {1 - failed} passed | {failed} failed |")
    return failed


if __name__ == "__main__":
    sys.exit(main())
