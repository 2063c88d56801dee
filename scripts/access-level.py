#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Keeps `public` for the API a user of a library product calls and `package` for everything else in Sources.

Every target in this package sees the others' `package` declarations, tests and bench executables included, so
`public` is needed only by code outside the package: the libFuzzer package in fuzz/, which links the products JSON,
HTTPServer, TLSIdentity, PushStore and BeamsModel. Those declarations are listed in scripts/public-api.txt, one
`Target: Qualified.Name` a line (see that file); every other `public` declaration in Sources is demoted to `package`.

    python3 scripts/access-level.py --check   # exit 1 naming each public declaration not in the list (make check)
    python3 scripts/access-level.py --write   # rewrite them to package; idempotent, rerun after any merge

The script reads Swift with a small lexer (comments, string literals with interpolation, raw and multi-line strings)
and tracks the enclosing types by their braces, so a declaration's name is its path from the file's top level
(`JSONValue.parse`, `RequestParser.Limits.init`); members of an extension are named after the extended type. It only
ever turns `public` into `package`, never the other way: promoting is a decision for a person, who adds the line to
the list and writes `public` by hand.
"""

import argparse
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCES = ROOT / "Sources"
ALLOW_LIST = ROOT / "scripts" / "public-api.txt"
LIST_NAME = "scripts/public-api.txt"

# Modifiers that may stand between `public` and the declaration's keyword.
MODIFIERS = {
    "static", "class", "final", "mutating", "nonmutating", "convenience", "override", "required", "lazy",
    "nonisolated", "indirect", "dynamic", "weak", "unowned", "optional", "prefix", "postfix", "infix", "consuming",
    "borrowing", "distributed",
}
DECLARATION = re.compile(
    r"\b(func|var|let|struct|class|enum|protocol|actor|typealias|associatedtype|init|subscript|extension|macro)\b"
    r"[?!]?\s*(`?[A-Za-z_][\w]*`?|[-+*/%<>=!&|^~?.]+)?")
TYPE_DECLARATION = re.compile(r"(?<![.\w])(struct|class|enum|protocol|actor|extension)\s+([A-Za-z_][\w.]*)")
PUBLIC = re.compile(r"(?<![.\w`])public\b(?!\s*:)")
# `open` is a contextual keyword (`func open()` is common): only as a modifier before a declaration.
OPEN = re.compile(r"(?<![.\w`])open(?=\s+(?:class|func|var|subscript|static|final|override|required|convenience)\b)")


def mask(text):
    """Returns `text` with every character of comments and string literals (not their interpolations) made a space.

    Newlines are kept, so line and column numbers stay those of the source.
    """
    out = list(text)
    n = len(text)
    i = 0
    # Stack of contexts: ("code", paren depth) for interpolations, ("string", hashes, multiline).
    stack = [("code", 0)]

    def blank(start, end):
        for k in range(start, end):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        top = stack[-1]
        c = text[i]
        if top[0] == "code":
            if text.startswith("//", i):
                end = text.find("\n", i)
                end = n if end < 0 else end
                blank(i, end)
                i = end
                continue
            if text.startswith("/*", i):
                depth, j = 1, i + 2
                while j < n and depth:
                    if text.startswith("/*", j):
                        depth, j = depth + 1, j + 2
                    elif text.startswith("*/", j):
                        depth, j = depth - 1, j + 2
                    else:
                        j += 1
                blank(i, j)
                i = j
                continue
            m = re.compile(r'(#*)("""|")').match(text, i)
            if m and (m.group(1) or c == '"'):
                hashes = len(m.group(1))
                multiline = m.group(2) == '"""'
                blank(i, m.end())
                stack.append(("string", hashes, multiline))
                i = m.end()
                continue
            if len(stack) > 1:
                if c == "(":
                    stack[-1] = ("code", top[1] + 1)
                elif c == ")":
                    if top[1] == 0:
                        stack.pop()
                        blank(i, i + 1)
                        i += 1
                        continue
                    stack[-1] = ("code", top[1] - 1)
            i += 1
            continue
        # Inside a string literal.
        _, hashes, multiline = top
        closing = ('"""' if multiline else '"') + "#" * hashes
        escape = "\\" + "#" * hashes
        if text.startswith(escape + "(", i):
            blank(i, i + len(escape) + 1)
            i += len(escape) + 1
            stack.append(("code", 0))
            continue
        if text.startswith(escape, i):
            blank(i, min(n, i + len(escape) + 1))
            i += len(escape) + 1
            continue
        if text.startswith(closing, i):
            blank(i, i + len(closing))
            i += len(closing)
            stack.pop()
            continue
        blank(i, i + 1)
        i += 1
    return "".join(out)


class Declaration:
    def __init__(self, path, line, column, target, name, signature, keyword="public"):
        self.path, self.line, self.column, self.target, self.name = path, line, column, target, name
        self.keyword = keyword  # `open` is reported but never rewritten: only `open` allows a subclass elsewhere
        self.signature = signature  # `Type.init(parsing:limits:)` for a function, initializer or subscript


    def where(self):
        return f"{self.path.relative_to(SOURCES.parent)}:{self.line + 1}"


def declarations(path):
    """Yields each `public` modifier of `path` as a Declaration (line and column of the keyword)."""
    text = path.read_text()
    masked = mask(text).split("\n")
    target = path.relative_to(SOURCES).parts[0]
    scopes = []  # one entry per open brace: the type name it opens, or None
    pending = None
    for number, line in enumerate(masked):
        for m in sorted([*PUBLIC.finditer(line), *OPEN.finditer(line)], key=lambda m: m.start()):
            rest = line[m.end():]
            rest = re.sub(r"^\s*\((set)\)", "", rest)
            words = rest.split()
            k = 0
            while k < len(words) and (words[k] in MODIFIERS or re.fullmatch(r"\w+\(set\)", words[k])):
                if words[k] == "class" and k + 1 < len(words) and words[k + 1] not in MODIFIERS | {
                        "func", "var", "let", "subscript"}:
                    break
                k += 1
            d = DECLARATION.match(" ".join(words[k:]))
            if d is None:
                name = "?"
            elif d.group(1) in ("init", "subscript"):
                name = d.group(1)
            else:
                name = (d.group(2) or "?").strip("`")
            context = [s for s in scopes if s]
            qualified = ".".join(context + [name])
            signature = None
            if d is not None and d.group(1) in ("func", "init", "subscript"):
                labels = parameter_labels("\n".join(masked[number:number + 20])[m.end():], d.group(1))
                if labels is not None and not re.match(r"\w", name):
                    labels = ["_"] * len(labels)  # an operator's parameters have no argument labels
                if labels is not None:
                    signature = qualified + "(" + "".join(label + ":" for label in labels) + ")"
            yield Declaration(path, number, m.start(), target, qualified, signature, m.group(0))
        # Braces and type declarations, in order along the line.
        events = [(m.start(), "type", m.group(2)) for m in TYPE_DECLARATION.finditer(line)]
        events += [(i, ch, None) for i, ch in enumerate(line) if ch in "{}"]
        for _, kind, name in sorted(events, key=lambda e: e[0]):
            if kind == "type":
                pending = name
            elif kind == "{":
                scopes.append(pending)
                pending = None
            elif scopes:
                scopes.pop()


def parameter_labels(text, keyword):
    """The argument labels of the first parameter list after `keyword` in `text` (`_` for none), or None."""
    start = re.search(r"\b" + keyword + r"\b", text)
    if start is None:
        return None
    i, depth = start.end(), 0
    # Skip the name and generic parameters up to the parameter list's opening parenthesis.
    while i < len(text) and text[i] != "(":
        i += 1
    # Each parameter's text before its first top-level colon; a comma inside generic arguments or a default value
    # splits a parameter, and a piece without a top-level colon continues the one before it.
    params, current, colon = [], "", False
    for ch in text[i:]:
        if ch in "([":
            depth += 1
            if depth == 1:
                continue
        elif ch in ")]":
            depth -= 1
            if depth == 0:
                break
        if depth == 1 and ch == ",":
            if colon or not params:
                params.append(current)
            current, colon = "", False
        elif depth == 1 and ch == ":" and not colon:
            colon = True
        elif not colon:
            current += ch
    if colon:
        params.append(current)
    params = [param for param in params if param.strip()]
    labels = [param.split(":", 1)[0].split()[0].strip("`") for param in params]
    if keyword == "subscript":
        labels = [label if len(param.split(":", 1)[0].split()) > 1 else "_" for label, param in zip(labels, params)]
    return labels


def read_allow_list():
    """`Target: Name` lines: Name exactly (every overload), or `Name.*` for every member under Name."""
    entries = []
    for number, raw in enumerate(ALLOW_LIST.read_text().splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.fullmatch(r"(\w+)\s*:\s*([\w.=<>!+\-*/%&|^~?]+?(?:\([\w:]*\))?)(\.\*)?", line)
        if not m:
            sys.exit(f"{LIST_NAME}:{number}: expected `Target: Name` or `Target: Name.*`: {raw}")
        entries.append((number, m.group(1), m.group(2), bool(m.group(3))))
    return entries


def allowed(declaration, entries, used):
    for entry in entries:
        number, target, name, members = entry
        if target != declaration.target:
            continue
        if name in (declaration.name, declaration.signature) or (members and declaration.name.startswith(name + ".")):
            used.add(number)
            return True
    return False


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="fail naming each public declaration not in the list")
    mode.add_argument("--write", action="store_true", help="rewrite those declarations to package")
    mode.add_argument("--list", action="store_true", help="print every public declaration with its list name")
    parser.add_argument("--root", type=pathlib.Path, default=ROOT,
                        help="the package (Sources and scripts/public-api.txt under it); default this repository")
    args = parser.parse_args()
    global SOURCES, ALLOW_LIST
    SOURCES, ALLOW_LIST = args.root / "Sources", args.root / "scripts" / "public-api.txt"

    entries = read_allow_list()
    used = set()
    offenders = []
    changed_files = 0
    for path in sorted(SOURCES.rglob("*.swift")):
        found = list(declarations(path))
        if args.list:
            for d in found:
                print(f"{d.where()}: {d.target}: {d.signature or d.name}")
            continue
        demote = [d for d in found if not allowed(d, entries, used)]
        rewrite = [d for d in demote if d.keyword == "public"]
        if args.write and rewrite:
            lines = path.read_text().split("\n")
            for d in sorted(rewrite, key=lambda d: (d.line, -d.column)):
                text = lines[d.line]
                lines[d.line] = text[:d.column] + "package" + text[d.column + len("public"):]
            path.write_text("\n".join(lines))
            changed_files += 1
        offenders += demote
    if args.list:
        return 0
    stale = [e for e in entries if e[0] not in used]
    opened = [d for d in offenders if d.keyword == "open"]
    if args.write:
        demoted = len(offenders) - len(opened)
        print(f"access-level: {demoted} public declarations made package in {changed_files} files")
    for d in opened:
        print(f"{d.where()}: open {d.target}: {d.signature or d.name} is not in {LIST_NAME}: make it `package` "
              "(then no other module can subclass or override it) or list it; --write leaves `open` to you")
    if args.check:
        for d in offenders:
            if d.keyword == "public":
                print(f"{d.where()}: public {d.target}: {d.signature or d.name} is not in {LIST_NAME}")
        if offenders:
            print(f"access-level: {len(offenders)} public declarations outside scripts/public-api.txt. Inside the "
                  "package `package` is enough (tests and bench/swift included); use `package`, or run "
                  "`python3 scripts/access-level.py --write`. Keep `public` only for what code outside the package "
                  f"calls (fuzz/), and then add `Target: Name` to {LIST_NAME} with the reason.")
    for number, target, name, members in stale:
        print(f"{LIST_NAME}:{number}: `{target}: {name}{'.*' if members else ''}` names no public "
              "declaration: remove the line, or the declaration lost its `public`")
    return 1 if (args.check and (offenders or stale)) else 0


if __name__ == "__main__":
    sys.exit(main())
