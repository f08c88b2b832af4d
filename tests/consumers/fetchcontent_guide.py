#!/usr/bin/env python3
"""The guide's FetchContent file (docs/guide/01-first-profile.md, the ```cmake block with
FetchContent_Declare) works offline as written, both ways, and CMake warns about nothing (CMP0135
among others): from an archive made by the guide's `git archive` line, configured, built and run; and
from the local repository (the other FetchContent_Declare line, the branch put at this checkout's
commit), configured. Only the clone's path /opt/src/stint is replaced, by a temporary clone of this
checkout's HEAD. app.cpp is tests/consumers/consumer.cpp. Ends with doctest's summary line.

usage: fetchcontent_guide.py SOURCE_ROOT CMAKE
"""
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import textwrap

results = []


def check(ok, what, detail=""):
    results.append(ok)
    print(("ok: " if ok else "FAILED: ") + what + ("" if ok else "\n" + detail[-4000:]), flush=True)


def run(cmd, cwd=None, timeout=900):
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def main() -> int:
    root, cmake = pathlib.Path(sys.argv[1]).resolve(), sys.argv[2]
    guide = (root / "docs" / "guide" / "01-first-profile.md").read_text(encoding="utf-8")
    block = next(b for b in re.findall(r"^ *```cmake\n(.*?)^ *```", guide, re.S | re.M) if "FetchContent_Declare" in b)
    text = textwrap.dedent(block)
    archive_line = next(l for l in text.splitlines() if "git -C" in l).split("archive:", 1)[1].strip()
    url_line = next(l for l in text.splitlines() if l.startswith("FetchContent_Declare(stint URL"))
    git_line = next(l for l in text.splitlines() if "GIT_REPOSITORY" in l)
    with tempfile.TemporaryDirectory(prefix="stint-fetch-guide-") as tmp:
        work = pathlib.Path(tmp)
        clone = work / "src" / "stint"
        made = run(["git", "clone", "-q", str(root), str(clone)])
        check(made.returncode == 0, "a clone of this checkout", made.stderr)
        if made.returncode != 0:
            return finish()
        commit = run(["git", "-C", str(root), "rev-parse", "HEAD"]).stdout.strip()
        run(["git", "-C", str(clone), "checkout", "-q", commit])
        place = lambda s: s.replace("/opt/src/stint", str(clone))  # noqa: E731
        made = run(shlex.split(place(archive_line)))
        check(made.returncode == 0, f"the guide's archive line: {archive_line}", made.stderr)
        ways = {
            "an archive (URL)": (place(text), True),
            "the clone (GIT_REPOSITORY)": (place(text.replace(url_line, "# " + url_line).replace(
                git_line, git_line.lstrip("# ").replace("GIT_TAG main", f"GIT_TAG {commit}"))), False),
        }
        for way, (cmakelists, build) in ways.items():
            app = work / re.sub(r"\W", "_", way)
            app.mkdir()
            (app / "CMakeLists.txt").write_text(cmakelists, encoding="utf-8")
            shutil.copy(root / "tests" / "consumers" / "consumer.cpp", app / "app.cpp")
            configured = run([cmake, "-S", str(app), "-B", str(app / "build"), "-G", "Ninja"])
            output = configured.stdout + configured.stderr
            check(configured.returncode == 0 and "Warning" not in output,
                  f"from {way}: configured, and CMake warns about nothing", output)
            if build and configured.returncode == 0:
                built = run([cmake, "--build", str(app / "build")])
                ran = run([str(app / "build" / "app"), str(app / "t.json")]) if built.returncode == 0 else built
                check(built.returncode == 0 and ran.returncode == 0, f"from {way}: built and run",
                      built.stdout + built.stderr + ran.stdout + ran.stderr)
    return finish()


def finish():
    failed = results.count(False)
    print(f"[doctest] test cases: {len(results)} | {len(results) - failed} passed | {failed} failed |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
