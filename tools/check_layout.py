#!/usr/bin/env python3
"""Checks docs/design.md §5 against include/stint/, as CI checks the single header against its sources:

1. "Every header": each .hpp under include/stint/ has a row, and each row names a header that exists;
2. "Features and their files": every file a feature names exists;
3. "What each folder may include": each `#include "stint/..."` of a file under a folder names that
   folder, or a folder or file its row allows (a folder's impl/ and detail/ count as the folder);
4. separate compilation (design §16): every impl/*.ipp is included by its header under
   `#if defined(STINT_HEADER_ONLY)` and listed in impl/src.hpp, or (device code, which needs CUDA's
   headers) included by its header unconditionally and not listed there.

usage: tools/check_layout.py     (exit 1 and a list of what differs when the map is stale)
"""
import fnmatch
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
INCLUDE = ROOT / "include" / "stint"
LOCAL_INCLUDE = re.compile(r'^\s*#\s*include\s+"stint/([^"]+)"', re.M)


def section(design: str, title: str) -> str:
    start = design.index(f"### {title}")
    end = design.find("\n### ", start + 1)
    end2 = design.find("\n## ", start + 1)
    ends = [e for e in (end, end2) if e != -1]
    return design[start:min(ends) if ends else len(design)]


def table_rows(text: str) -> list:
    rows = []
    for line in text.splitlines():
        if line.startswith("|") and not line.startswith("| ---") and not line.startswith("|---"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            rows.append(cells)
    return rows[1:]  # the header row


def folder_of(relative: str) -> str:
    """'analysis/impl/table.ipp' -> 'analysis/'; a top-level file, and a top-level header's body
    ('impl/schedule.ipp') -> '' (include/stint/ itself); impl/src.hpp -> 'impl/'."""
    parts = relative.split("/")
    if len(parts) == 1 or (parts[0] == "impl" and relative != "impl/src.hpp"):
        return ""
    return parts[0] + "/"


def allows(rule: str, target: str) -> bool:
    """A rule is a folder ('drain/'), a file ('scope.hpp') or a pattern ('*/impl/*', '*')."""
    if "*" in rule:
        return fnmatch.fnmatch(target, rule)
    return target == rule or (rule.endswith("/") and target.startswith(rule))


def main() -> int:
    design = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    layout = design[design.index("## 5. Layout"):design.index("## 6.")]
    problems = []
    tree = {str(p.relative_to(INCLUDE)) for p in INCLUDE.rglob("*.hpp")}

    # 1. Every header.
    mapped = set()
    for cells in table_rows(section(layout, "Every header")):
        mapped.update(re.findall(r"`([^`]+\.hpp)`", cells[0]))
    problems += [f"§5 'Every header' lacks {h}" for h in sorted(tree - mapped)]
    problems += [f"§5 'Every header' names {h}, which does not exist" for h in sorted(mapped - tree)]

    # 2. Features.
    for cells in table_rows(section(layout, "Features and their files")):
        for name in re.findall(r"`([^`]+\.(?:hpp|ipp))`", cells[1] if len(cells) > 1 else ""):
            if not (INCLUDE / name).is_file():
                problems.append(f"§5 'Features and their files' ({cells[0]}) names {name}, which does not exist")

    # 3. Include rules.
    allowed = {}
    for cells in table_rows(section(layout, "What each folder may include")):
        folder = re.findall(r"`([^`]*)`", cells[0])
        if not folder:
            continue
        key = "" if folder[0] in ("stint/", "(top level)") else folder[0]
        allowed[key] = re.findall(r"`([^`]+)`", cells[1])
    for path in sorted(INCLUDE.rglob("*")):
        if path.suffix not in (".hpp", ".ipp"):
            continue
        relative = str(path.relative_to(INCLUDE))
        folder = folder_of(relative)
        if folder not in allowed:
            problems.append(f"§5 'What each folder may include' has no row for {folder or 'stint/ (top level)'}")
            allowed[folder] = []
            continue
        for target in LOCAL_INCLUDE.findall(path.read_text(encoding="utf-8")):
            if (folder and target.startswith(folder)) or (not folder and "/" not in target) or \
                    (not folder and target.startswith("impl/") and target != "impl/src.hpp"):
                continue
            ok = any(allows(rule, target) for rule in allowed[folder])
            if not ok:
                problems.append(f"{relative} includes stint/{target}, which §5 does not allow for {folder or 'stint/'}")

    # 4. Separate compilation.
    src = (INCLUDE / "impl" / "src.hpp").read_text(encoding="utf-8")
    listed = set(LOCAL_INCLUDE.findall(src))
    for body in sorted(INCLUDE.rglob("*.ipp")):
        relative = str(body.relative_to(INCLUDE))
        header = body.parent.parent / (body.stem + ".hpp")
        if not header.is_file():
            problems.append(f"{relative} has no header {header.relative_to(INCLUDE)}")
            continue
        text = header.read_text(encoding="utf-8")
        guarded = re.search(r'#if defined\(STINT_HEADER_ONLY\)\n#include "stint/' + re.escape(relative) + '"\n#endif',
                            text)
        always = re.search(r'^#include "stint/' + re.escape(relative) + '"$', text, re.M)
        if guarded and relative not in listed:
            problems.append(f"{relative}: impl/src.hpp does not include it")
        elif not guarded and always and relative in listed:
            problems.append(f"{relative} is always inline (its header includes it unconditionally), but impl/src.hpp lists it too")
        elif not guarded and not always:
            problems.append(f"{relative}: its header does not include it (under #if defined(STINT_HEADER_ONLY))")
    for relative in sorted(t for t in listed if t.endswith(".ipp")):
        if not (INCLUDE / relative).is_file():
            problems.append(f"impl/src.hpp includes {relative}, which does not exist")

    for problem in problems:
        print(problem)
    print(f"layout: {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
