#!/usr/bin/env python3
"""Compiles every ```cpp block of README.md and of the guide in docs/, so that what a newcomer copies
compiles, and checks that their relative links lead somewhere.

A block that starts with `#include` is a complete program: it is compiled and linked against include/
with no help but stint's session side, and run in a temporary directory of its own when it has a main().
Any other block is a sketch: it is checked with -fsyntax-only after tests/readme_prelude.hpp, which
declares the placeholders sketches use (Tensor, train_step(), ...). Both are built the separate way
(STINT_SEPARATE_COMPILATION, design §16), the session side compiled once into an object every program
links: the same code as header-only, in a fraction of the time (tests/separate_compilation builds the
README's example header-only, as a newcomer does). A block that is not C++ (a shell command, a CUDA or MPI file
that needs a toolkit) is fenced as another language and not compiled.

Each block is one test case, and the links of all files together are one more: a relative link must
name a file or folder that exists, and its #anchor a heading of that markdown file. The last line is
doctest's summary, so tools/run_tests.py counts the cases. Blocks are compiled a few at a time
(STINT_README_JOBS, default: the CPUs this process may use, at most 4); the report keeps their order.

usage: tools/check_readme.py MARKDOWN INCLUDE_DIR PRELUDE COMPILER [ARGS...]
MARKDOWN is one .md file, or a project folder: its README.md and every docs/**/*.md.
"""
import concurrent.futures
import functools
import os
import pathlib
import re
import shlex
import subprocess
import sys
import tempfile

BLOCK = re.compile(r"^```cpp\n(.*?)^```$", re.S | re.M)
FENCE = re.compile(r"^```.*?^```$", re.S | re.M)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.M)
FLAGS = ["-std=c++20", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-DSTINT_SEPARATE_COMPILATION"]


def link_flags():
    run = subprocess.run(["pkg-config", "--libs", "fmt", "zlib"], capture_output=True, text=True)
    return (shlex.split(run.stdout) if run.returncode == 0 else ["-lfmt", "-lz"]) + ["-pthread"]


def markdown_files(target):
    """(the folder names are shown relative to, the files to check)."""
    target = pathlib.Path(target).resolve()
    if target.is_dir():
        files = [target / "README.md"] + sorted((target / "docs").rglob("*.md"))
        return target, [f for f in files if f.is_file()]
    return target.parent, [target]


def compile_session_side(include, compiler, work):
    """The object of <stint/impl/src.hpp> that every complete program links; (path, None) or (None, error)."""
    source = work / "stint_impl.cpp"
    source.write_text("#include <stint/impl/src.hpp>\n", encoding="utf-8")
    obj = work / "stint_impl.o"
    run = subprocess.run(compiler + FLAGS + ["-I", include, "-c", str(source), "-o", str(obj)], capture_output=True,
                         text=True, errors="replace", timeout=600)
    return (obj, None) if run.returncode == 0 else (None, (run.stdout + run.stderr)[-4000:])


def check_block(block, include, prelude, compiler, libs, work, session_side):
    """block: (number, name, line, code); session_side: a future of compile_session_side's result.
    Returns (ok, report)."""
    number, name, line, code = block
    folder = work / f"block_{number}"
    folder.mkdir()
    source = folder / "block.cpp"
    # The compiler's messages name the markdown file and its line, not the temporary copy.
    source.write_text(f'#line {line} "{name}"\n' + code, encoding="utf-8")
    complete = code.lstrip().startswith("#include")
    if complete:
        binary = folder / "block"
        impl, error = session_side.result()
        if impl is None:
            return False, f"{name}:{line}: block {number}: <stint/impl/src.hpp> did not compile:\n{error}"
        steps = [compiler + FLAGS + ["-I", include, str(source), str(impl), "-o", str(binary)] + libs]
        if re.search(r"\bint main\s*\(", code):
            steps.append([str(binary)])
    else:
        steps = [compiler + FLAGS + ["-fsyntax-only", "-I", include, "-include", prelude, str(source)]]
    for step in steps:
        run = subprocess.run(step, cwd=folder, capture_output=True, text=True, errors="replace", timeout=600)
        if run.returncode != 0:
            kind = "complete program" if complete else "sketch (with the prelude)"
            return False, (f"{name}:{line}: block {number}, a {kind}, fails: {shlex.join(step)}\n"
                           + (run.stdout + run.stderr)[-4000:])
    done = "compiled, linked and run" if complete else "syntax checked"
    return True, f"{name}:{line}: block {number} ok ({done})"


def slug(heading):
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[`*]|<[^>]*>", "", heading).strip().lower()
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


@functools.lru_cache(maxsize=None)  # a file's headings, read once however many links point into it
def anchors(path):
    seen, result = {}, set()
    for heading in HEADING.findall(FENCE.sub("", path.read_text(encoding="utf-8"))):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        result.add(base if count == 0 else f"{base}-{count}")
    return result


def check_links(files, base):
    """Every relative link of the files leads to a file or folder, and its anchor to a heading."""
    problems, count = [], 0
    for path in files:
        text = path.read_text(encoding="utf-8")
        # Code is not prose: a fenced block or inline code may hold brackets that are no link. Blanked
        # with what keeps the line numbers.
        text = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
        text = INLINE_CODE.sub("``", text)
        for match in LINK.finditer(text):
            target = match.group(1)
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                continue
            count += 1
            line = text.count("\n", 0, match.start()) + 1
            where = f"{path.relative_to(base)}:{line}: link '{target}'"
            file_part, _, anchor = target.partition("#")
            destination = (path.parent / file_part).resolve() if file_part else path
            if not destination.exists():
                problems.append(f"{where}: no file {destination}")
            elif anchor and destination.suffix == ".md" and anchor not in anchors(destination):
                problems.append(f"{where}: no heading with anchor #{anchor} in {destination.relative_to(base)}")
    return count, problems


def main() -> int:
    target, include, prelude, *compiler = sys.argv[1:]
    include, prelude = str(pathlib.Path(include).resolve()), str(pathlib.Path(prelude).resolve())
    base, files = markdown_files(target)
    blocks = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        for match in BLOCK.finditer(text):
            line = text.count("\n", 0, match.start()) + 2
            blocks.append((len(blocks) + 1, str(path.relative_to(base)), line, match.group(1)))
    jobs = int(os.environ.get("STINT_README_JOBS") or min(len(os.sched_getaffinity(0)), 4))
    libs = link_flags()
    failed = 0
    with tempfile.TemporaryDirectory(prefix="stint-readme-") as tmp, \
            concurrent.futures.ThreadPoolExecutor(max_workers=max(jobs, 1)) as pool:
        work = pathlib.Path(tmp)
        session_side = pool.submit(compile_session_side, include, compiler, work)
        checks = [pool.submit(check_block, block, include, prelude, compiler, libs, work, session_side)
                  for block in blocks]
        for result in checks:
            ok, report = result.result()
            failed += not ok
            print(report, flush=True)
    links, problems = check_links(files, base)
    for problem in problems:
        print(problem)
    failed += bool(problems)
    print(f"links: {links} relative links in {len(files)} files, {len(problems)} broken")
    total = len(blocks) + 1  # the blocks, and the links
    if not blocks:
        print(f"{target}: no ```cpp blocks found")
        failed += 1
        total += 1
    print(f"[doctest] test cases: {total} | {total - failed} passed | {failed} failed |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
