#!/usr/bin/env python3
"""Checks tests/perfetto/stint_perfetto.proto (the subset of Perfetto's trace schema that stint writes,
written here by hand) against Perfetto's own published .proto files: every message of the subset must
exist upstream, and every field in it must have upstream's number, type and label (repeated or not),
and sit in a oneof where upstream has one; every enum value, upstream's number. A field number or type copied wrongly here would let
protoc decode stint's bytes as the subset says while Perfetto's own readers see something else.

usage: check_schema.py SUBSET_PROTO PERFETTO_CHECKOUT

PERFETTO_CHECKOUT is a checkout of https://github.com/google/perfetto (its protos/perfetto/trace and
protos/perfetto/common are read). Prints one line per message checked, "N fields checked, N wrong",
and doctest's summary line (a test case per message); exit status 1 on any difference.
"""
import os
import re
import sys

TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[A-Za-z_][A-Za-z0-9_.]*|-?\d+|[{}=;\[\]<>(),]')
SCALARS = {"double", "float", "int32", "int64", "uint32", "uint64", "sint32", "sint64", "fixed32", "fixed64",
           "sfixed32", "sfixed64", "bool", "string", "bytes"}


def tokens(text):
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return TOKEN.findall(text)


def skip_statement(toks, i):
    """Skips to past the ';' that ends a statement, or past the block it opens."""
    depth = 0
    while i < len(toks):
        t = toks[i]
        i += 1
        if t == "{":
            depth += 1
        elif t == "}":
            depth -= 1
            if depth == 0:
                return i
        elif t == ";" and depth == 0:
            return i
    return i


def parse(text, messages):
    """Adds {message full name (without package): {field name: (number, type, label, oneof)}}."""
    toks = tokens(text)
    stack = []  # (kind, name): "message", "enum", "oneof", "other"
    i = 0
    while i < len(toks):
        t = toks[i]
        if t == "}":
            stack.pop()
            i += 1
            continue
        if t == ";":  # an empty statement (after a nested block)
            i += 1
            continue
        if t in ("syntax", "package", "import", "option", "reserved", "extensions"):
            i = skip_statement(toks, i)
            continue
        if t in ("message", "enum", "oneof", "service", "extend"):
            name = toks[i + 1]
            kind = t if t in ("message", "enum", "oneof") else "other"
            stack.append((kind, name))
            if kind == "message":
                messages.setdefault(".".join(n for k, n in stack if k == "message"), {})
            i += 3  # keyword, name, "{"
            continue
        inside = stack[-1][0] if stack else None
        if inside == "enum" and toks[i + 1] == "=":  # a value: NAME = NUMBER;, kept as a field of the enum
            enum = ".".join(n for k, n in stack if k in ("message", "enum"))
            messages.setdefault(enum, {})[t] = (int(toks[i + 2]), "enum value", "optional", None)
            i = skip_statement(toks, i)
            continue
        if inside in ("enum", "other") or inside is None:
            i = skip_statement(toks, i)
            continue
        # A field: [label] type name = number [options];  (map<K, V> fields do not occur in the subset)
        label = "optional"
        if t in ("optional", "repeated", "required"):
            label = t
            i += 1
        if toks[i] == "map":
            i = skip_statement(toks, i)
            continue
        ftype, name, eq, number = toks[i], toks[i + 1], toks[i + 2], toks[i + 3]
        if eq != "=":
            raise ValueError(f"cannot read a field at {' '.join(toks[i:i + 6])}")
        oneof = stack[-1][1] if inside == "oneof" else None
        message = ".".join(n for k, n in stack if k == "message")
        messages[message][name] = (int(number), ftype, label, oneof)
        i = skip_statement(toks, i)
    return messages


def short_type(ftype):
    """A scalar as it is; a message or enum by its last name (packages and nesting differ in spelling)."""
    return ftype if ftype in SCALARS else ftype.split(".")[-1]


def main():
    subset_path, checkout = sys.argv[1], sys.argv[2]
    subset = parse(open(subset_path).read(), {})
    upstream = {}
    for folder in ("protos/perfetto/trace", "protos/perfetto/common"):
        for root, _, files in os.walk(os.path.join(checkout, folder)):
            for name in sorted(files):
                if name.endswith(".proto"):
                    parse(open(os.path.join(root, name)).read(), upstream)
    checked = wrong = failed_messages = 0
    for message, fields in sorted(subset.items()):
        theirs = upstream.get(message)
        if theirs is None:
            wrong += 1
            failed_messages += 1
            print(f"{message}: WRONG: no such message in Perfetto's protos")
            continue
        problems = []
        for name, (number, ftype, label, oneof) in sorted(fields.items()):
            checked += 1
            if name not in theirs:
                problems.append(f"{name}: no such field upstream")
                continue
            u_number, u_type, u_label, u_oneof = theirs[name]
            if number != u_number:
                problems.append(f"{name}: number {number}, upstream {u_number}")
            if short_type(ftype) != short_type(u_type):
                problems.append(f"{name}: type {ftype}, upstream {u_type}")
            if (label == "repeated") != (u_label == "repeated"):
                problems.append(f"{name}: {label}, upstream {u_label}")
            if (oneof is None) != (u_oneof is None):
                problems.append(f"{name}: oneof {oneof}, upstream {u_oneof}")
        wrong += len(problems)
        failed_messages += 1 if problems else 0
        status = "ok" if not problems else "WRONG: " + "; ".join(problems)
        print(f"{message}: {len(fields)} fields: {status}")
    print(f"{checked} fields checked, {wrong} wrong")
    # One test case per message, in doctest's words, which tools/run_tests.py counts.
    print(f"[doctest] test cases: {len(subset)} | {len(subset) - failed_messages} passed | {failed_messages} failed |")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
