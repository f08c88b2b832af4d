#!/usr/bin/env python3
"""Checks stint's promises about object code (design §6) on x86-64, for each compiler given.

1. Compiled out is free. compiled_out*.cpp are compiled without instrumentation (this script blanks
   every STINT_* line and the stint include; compiled_out_annotate.cpp includes only annotate.hpp) and with stint compiled out (-DSTINT_DISABLE, and
   STINT_CONFIG=stint::disabled). Each function of the uninstrumented object must disassemble to the
   same instructions and relocations in the other; and the other may hold more functions, data
   sections, data objects or strings only where an object that just includes stint.hpp has them.
2. A scope disabled at run time is one load and one branch: see walk_not_recording().

Each (compiler, level, check) is a test case. The last line is doctest's summary, which
tools/run_tests.py counts. A failure prints the normalised diff or the walked path.

usage: check_codegen.py [--opt=-O2 ...] [--out DIR] CXX [CXX ...]
"""
import argparse
import difflib
import re
import shlex
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
INCLUDE = HERE.parents[1] / "include"
FLAGS = ["-std=c++20", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-ffunction-sections", "-fdata-sections"]
COMPILED_OUT = [  # (source, how stint is compiled out)
    ("compiled_out.cpp", "-DSTINT_DISABLE"),
    ("compiled_out.cpp", "-DSTINT_CONFIG=::stint::disabled"),
    ("compiled_out_named.cpp", "-DSTINT_DISABLE"),
    ("compiled_out_annotate.cpp", "-DSTINT_DISABLE"),  # a framework's file with only the annotation header
]
STINT_LINE = re.compile(r'^\s*STINT_[A-Z_]+\(.*\);\s*(//.*)?$|^#include "stint/')
LOCAL_LABEL = re.compile(r"^(\.L[A-Za-z_.]*?)\.?\d[\d_]*")  # .LC0, .L.str.5: numbered per object
RECORDING = re.compile(r"\bstint::detail::(?:\w+::)?recording\b")
USER_CALL = "opaque()"
MAX_DIFF = 80  # lines of diff shown per function
CALLER_SAVED = {"ax", "cx", "dx", "si", "di", "r8", "r9", "r10", "r11"}


class Failure(Exception):
    pass


def run(cmd):
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        raise Failure(f"$ {shlex.join(cmd)}\n{done.stdout}{done.stderr}")
    return done.stdout


class Build:
    """Objects of one compiler at one level, each compiled once."""

    def __init__(self, cxx, opt, out_dir):
        self.cxx, self.opt, self.out_dir, self.objects = cxx, opt, out_dir, {}

    def object(self, source, *flags):
        if (source, flags) not in self.objects:
            tag = re.sub(r"\W+", "_", f"{self.cxx}{self.opt}{''.join(flags)}")
            obj = self.out_dir / f"{source.stem}{tag}.o"
            run([*shlex.split(self.cxx), *FLAGS, self.opt, *flags, f"-I{INCLUDE}", "-c", str(source), "-o", str(obj)])
            self.objects[source, flags] = obj
        return self.objects[source, flags]

    def uninstrumented(self, source):
        """The object of `source` with every STINT_* line blanked (line numbers kept), no stint include."""
        lines = ["" if STINT_LINE.match(line) else line for line in source.read_text().splitlines()]
        for number, line in enumerate(lines, 1):
            if "STINT_" in line.split("//")[0]:
                raise Failure(f"{source.name}:{number}: put each STINT_* use on a line of its own: {line.strip()}")
        plain = self.out_dir / f"{source.stem}.plain.cpp"
        plain.write_text("\n".join(lines) + "\n")
        return self.object(plain)


class Insn:
    def __init__(self, offset, op, args):
        self.offset, self.op, self.args, self.relocs = offset, op, re.sub(r"\s*#.*$", "", args), []

    def __str__(self):
        """Address-free: an internal branch target as its offset in the function (objdump's listing
        starts each function at 0 with -ffunction-sections), a relocated one only in the relocation,
        which names its symbol with local labels unnumbered."""
        args = self.args
        if self.op.startswith(("j", "call")):
            args = re.sub(r"^([0-9a-f]+) <.*>$", "" if self.relocs else r"0x\1", args)
        return "\n".join([f"{self.op} {args}".rstrip()] +
                         [f"    {kind} " + LOCAL_LABEL.sub(r"\1", target) for kind, target in self.relocs])


def functions(obj):
    """{demangled name: [Insn]}."""
    funcs, current = {}, None
    for line in run(["objdump", "-d", "-r", "-C", "--no-show-raw-insn", str(obj)]).splitlines():
        if m := re.match(r"^[0-9a-f]+ <(.*)>:$", line):
            current = funcs.setdefault(m[1], [])
        elif m := re.match(r"^\s*[0-9a-f]+: (R_\w+)\s+(.*)$", line):
            current[-1].relocs.append((m[1], m[2]))
        elif m := re.match(r"^\s*([0-9a-f]+):\t(\S+)\s*(.*)$", line):
            current.append(Insn(int(m[1], 16), m[2], m[3]))
    return funcs


def listing(insns):
    return "\n".join(map(str, insns))


def data(obj):
    """What an object holds besides code: {kind: Counter}."""
    sections = Counter()
    for line in run(["objdump", "-h", "-w", str(obj)]).splitlines():
        f = line.split()
        if len(f) > 6 and f[0].isdigit() and "ALLOC" in line and "CODE" not in line and int(f[2], 16) \
                and f[1] != ".eh_frame":  # call frame info of the functions compared above
            sections[f"{f[1]} ({int(f[2], 16)} bytes)"] += 1
    objects = Counter()
    for line in run(["objdump", "-t", "-C", str(obj)]).splitlines():
        if (m := re.match(r"^[0-9a-f]+ .{6}O \S+\t([0-9a-f]+) (.*)$", line)):
            objects[LOCAL_LABEL.sub(r"\1", m[2]) + f" ({int(m[1], 16)} bytes)"] += 1
    strings = Counter()
    if string_sections := [s.split()[0] for s in sections if ".str" in s]:
        dump = run(["readelf", "-W", *(f"-p{s}" for s in string_sections), str(obj)])
        strings.update(repr(m[1]) for m in re.finditer(r"^\s*\[\s*[0-9a-f]+\]  (.*)$", dump, re.M))
    return {"data section": sections, "data object": objects, "string": strings}


def differences(kind, base, variant, header):
    """Problems unless variant is base plus some of what the header alone emits (Counters)."""
    return ([f"{kind} {name} is missing when compiled out" for name in base - variant] +
            [f"{kind} {name} is there only when compiled out" for name in variant - base - header])


def check_compiled_out(build, source, switch):
    plain, built = build.uninstrumented(source), build.object(source, switch)
    header_only = build.out_dir / "header_only.cpp"
    header_only.write_text('#include "stint/stint.hpp"\n')
    header = build.object(header_only)
    base, variant, alone = functions(plain), functions(built), functions(header)
    problems = []
    for name in base.keys() & variant.keys():
        if listing(base[name]) != listing(variant[name]):
            diff = list(difflib.unified_diff(listing(base[name]).splitlines(), listing(variant[name]).splitlines(),
                                             "no instrumentation", switch, lineterm="", n=4))
            more = f"\n... {len(diff) - MAX_DIFF} more lines" if len(diff) > MAX_DIFF else ""
            problems.append(f"function {name} differs:\n" + "\n".join(diff[:MAX_DIFF]) + more)
    problems += [f"function {name} is missing when compiled out" for name in base.keys() - variant.keys()]
    problems += [f"function {name} is there only when compiled out"
                 for name in variant.keys() - base.keys() - alone.keys()]
    for (kind, b), v, h in zip(data(plain).items(), data(built).values(), data(header).values()):
        problems += differences(kind, b, v, h)
    if problems:
        raise Failure("\n".join(problems) + f"\n(objects: {plain}, {built})")
    return f"{len(base)} functions identical"


def family(reg):
    """%ebx, %bl, %rbx -> bx; %r14d -> r14."""
    r = reg.strip().lstrip("%")
    if m := re.fullmatch(r"(r\d+)[dwb]?", r):
        return m[1]
    if len(r) == 3 and r[0] in "re":
        r = r[1:]
    elif len(r) == 3 and r.endswith("l"):
        r = r[:-1]
    return r[0] + "x" if len(r) == 2 and r[1] in "lh" else r


def walk_not_recording(insns):
    """Follows scoped_call() from its entry along the branches taken while the recording flag is clear,
    and returns that path.

    Accepts, with any registers and in any order: one load of stint::detail::...::recording into a
    register (register copies of it are followed); `test $0x1` of it followed by je/jne, once before
    the user's call and at most once after it (no second load); the call or tail jump to opaque();
    ret; nops; moves and xors between registers or of immediates; lea; and the frame's push, pop and
    %rsp adjustment. Anything else on that path fails: any other memory access (TLS included), any
    other call or jump out of the function, rdtsc, any branch not on the saved state."""
    at = {insn.offset: n for n, insn in enumerate(insns)}
    state, flags_from_state, path, n = set(), False, [], 0
    loads = calls = tests_before = tests_after = 0
    while True:
        if n >= len(insns) or len(path) > len(insns):
            raise Failure("the path runs off the function or loops")
        insn = insns[n]
        path.append(insn)
        op, args, n = insn.op, insn.args, n + 1
        operands = [a.strip() for a in re.split(r",(?![^(]*\))", args)] if args else []
        target = insn.relocs[0][1] if insn.relocs else ""
        bare = re.sub(r"<.*>", "", args)  # without objdump's symbolic branch target
        memory = ("(" in bare or "%fs:" in bare) and op != "lea" and not op.startswith("nop")
        if RECORDING.search(target):
            if not (op.startswith("mov") and len(operands) == 2 and operands[1].startswith("%")):
                raise Failure(f"the recording flag is used by `{op} {args}`, not loaded into a register")
            loads += 1
            state.add(family(operands[1]))
        elif op.startswith("nop"):
            pass
        elif op in ("call", "jmp") and insn.relocs:
            if not target.startswith(USER_CALL):
                raise Failure(f"`{op}` to {target}")
            calls += 1
            state -= CALLER_SAVED
            if op == "jmp":
                break
        elif op == "ret":
            break
        elif memory and not op.startswith(("push", "pop")):
            raise Failure(f"memory access `{op} {args}`")
        elif op == "jmp":
            n = at[int(args.split()[0], 16)]
        elif op.startswith("j"):
            if not flags_from_state or op not in ("je", "jne", "jz", "jnz"):
                raise Failure(f"`{op}` does not branch on the recording bit of the saved state")
            if op in ("je", "jz"):  # taken when the bit is clear
                n = at[int(args.split()[0], 16)]
        elif op.startswith("test"):
            if operands[0] != "$0x1" or family(operands[1]) not in state:
                raise Failure(f"`{op} {args}` does not test the recording bit of the saved state")
            tests_after, tests_before = (tests_after + 1, tests_before) if calls else (tests_after, tests_before + 1)
            flags_from_state = True
            continue
        elif op.startswith(("push", "pop")) or (op in ("add", "sub") and operands[-1] == "%rsp"):
            pass
        elif op.startswith(("mov", "xor", "lea")) and operands[-1].startswith("%"):
            copy = op.startswith("mov") and operands[0].startswith("%") and family(operands[0]) in state
            (state.add if copy else state.discard)(family(operands[-1]))
        else:
            raise Failure(f"unexpected `{op} {args}`")
        if not op.startswith(("mov", "lea", "push", "pop", "nop", "j")):
            flags_from_state = False
    if (loads, tests_before, calls) != (1, 1, 1) or tests_after > 1:
        raise Failure(f"expected 1 load of the flag, 1 test of it before the call and at most 1 after, 1 call; "
                      f"got {loads}, {tests_before}, {tests_after}, {calls}")
    return path


def check_runtime_disabled(build):
    obj = build.object(HERE / "runtime_disabled.cpp")
    insns = functions(obj).get("scoped_call()")
    if not insns:
        raise Failure(f"no scoped_call() in {obj}")
    try:
        path = walk_not_recording(insns)
    except Failure as failure:
        raise Failure(f"on the not-recording path: {failure}\nscoped_call():\n{listing(insns)}") from None
    return "the not-recording path:\n" + "\n".join(f"    {insn}".replace("\n", "\n    ") for insn in path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("compilers", nargs="+", help="compiler commands, e.g. g++ clang++")
    parser.add_argument("--opt", action="append", help="an optimisation level, e.g. --opt=-O3 (default -O2)")
    parser.add_argument("--out", help="directory for the objects (default: a temporary one)")
    args = parser.parse_args()
    failed = total = 0
    with tempfile.TemporaryDirectory() as tmp:
        out_dir = Path(args.out or tmp)
        out_dir.mkdir(parents=True, exist_ok=True)
        for cxx in args.compilers:
            for opt in args.opt or ["-O2"]:
                build = Build(cxx, opt, out_dir)
                cases = [(f"{source} with {switch} compiles to the code without instrumentation",
                          lambda s=HERE / source, w=switch: check_compiled_out(build, s, w))
                         for source, switch in COMPILED_OUT]
                cases.append(("a scope disabled at run time costs one load and one branch",
                              lambda: check_runtime_disabled(build)))
                for name, case in cases:
                    total += 1
                    try:
                        print(f"ok: {cxx} {opt}: {name}: {case()}", flush=True)
                    except Failure as failure:
                        failed += 1
                        print(f"FAILED: {cxx} {opt}: {name}\n{failure}\n", flush=True)
    print(f"[doctest] test cases: {total} | {total - failed} passed | {failed} failed | 0 skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
