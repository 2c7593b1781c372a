#!/usr/bin/env python3
"""Lists C++ functions longer than a limit (default 80 lines).

    scripts/function_lengths.py [--limit N] [--exempt FILE ...] PATH...

A function's length is counted from the line of its opening brace to the
line of its closing brace, both included; lambdas and local classes count
towards the function that holds them. The scanner strips comments, string
and character literals (raw strings too) and preprocessor lines, then
matches braces: a brace at namespace or class scope opens a function body
when the text before it ends in a parameter list (optionally followed by
qualifiers, a trailing return type or a constructor's initialiser list)
and holds no '=' (an initialiser). Exit status 1 when a function is too
long, naming each one as FILE:LINE: NAME is N lines.
"""
import argparse
import pathlib
import re
import sys

SCOPE_WORDS = re.compile(r"\b(namespace|class|struct|union|enum)\b|extern\s*$")


def strip(text):
    """Blanks comments, literals and preprocessor lines, keeping newlines."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if line_start and c == "#":
            # Preprocessor line, with continuations.
            while i < n:
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append("\n")
                    i += 2
                    continue
                if text[i] == "\n":
                    break
                i += 1
            continue
        line_start = False
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append("".join(ch for ch in text[i:end] if ch == "\n"))
            i = end
            continue
        m = re.match(r'R"([^(\s]*)\(', text[i:i + 20])
        if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            close = ")" + m.group(1) + '"'
            end = text.find(close, i + m.end())
            end = n if end < 0 else end + len(close)
            out.append('""' + "".join(ch for ch in text[i:end] if ch == "\n"))
            i = end
            continue
        if c == '"' or (c == "'" and not (i > 0 and text[i - 1].isalnum())):
            q = c
            j = i + 1
            while j < n and text[j] != q:
                j += 2 if text[j] == "\\" else 1
            out.append(q + q)
            i = j + 1
            continue
        if c == "\n":
            line_start = True
        out.append(c)
        i += 1
    return "".join(out)


def is_function_head(head):
    head = head.strip()
    if not head or "=" in re.sub(r"(operator\s*(==|!=|<=|>=|=|\+=|-=|\*=|/=|<<=|>>=))", "", head):
        return False
    if SCOPE_WORDS.search(head) and not re.search(r"\)\s*(const|noexcept|override|final|\s)*$", head):
        return False
    # Strip a constructor's initialiser list and trailing qualifiers.
    h = re.sub(r"->\s*[\w:<>,\s\*&]+$", "", head)
    h = re.sub(r"\b(const|noexcept|override|final|mutable|try)\b\s*$", "", h).strip()
    while True:
        h2 = re.sub(r"\b(const|noexcept|override|final)\b\s*$", "", h).strip()
        if h2 == h:
            break
        h = h2
    if h.endswith(")"):
        return True
    # Constructor initialiser list: ") : a_(x), b_{y}"
    return re.search(r"\)\s*:\s*[\w:]+\s*[({]", head) is not None


def function_name(head):
    h = head.strip()
    depth = 0
    # Name before the parameter list: find the '(' matching the last ')'
    # of the declarator (before an initialiser list).
    m = re.search(r"([\w:~<>]+(?:operator\s*[^\s(]+)?)\s*\(", h)
    return m.group(1) if m else h[:40]


def scan(path, limit):
    text = strip(path.read_text(encoding="utf-8", errors="replace"))
    long = []
    stack = []  # kinds: 'scope', 'func', 'other'
    stmt_start = 0
    func_open = None
    i = 0
    for i, c in enumerate(text):
        if c == "{":
            in_func = any(k == "func" for k in stack)
            if in_func:
                stack.append("other")
                continue
            head = text[stmt_start:i]
            if is_function_head(head):
                stack.append("func")
                func_open = (i, function_name(head))
            elif SCOPE_WORDS.search(head):
                stack.append("scope")
                stmt_start = i + 1
            else:
                stack.append("other")
        elif c == "}":
            kind = stack.pop() if stack else "scope"
            if kind == "func":
                start, name = func_open
                first = text.count("\n", 0, start) + 1
                last = text.count("\n", 0, i) + 1
                if last - first + 1 > limit:
                    long.append((first, name, last - first + 1))
                stmt_start = i + 1
            elif kind == "scope":
                stmt_start = i + 1
            elif not any(k == "func" for k in stack) and not stack_has_other(stack):
                pass
        elif c == ";" and not any(k in ("func", "other") for k in stack):
            stmt_start = i + 1
    return long


def stack_has_other(stack):
    return any(k == "other" for k in stack)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--limit", type=int, default=80)
    ap.add_argument("--exempt", action="append", default=[],
                    help="a file (path suffix) whose functions are not checked")
    ap.add_argument("paths", nargs="+")
    args = ap.parse_args()
    files = []
    for p in args.paths:
        p = pathlib.Path(p)
        files += sorted(p.rglob("*.cc")) + sorted(p.rglob("*.h")) if p.is_dir() else [p]
    bad = 0
    for f in files:
        if any(str(f).endswith(e) for e in args.exempt):
            continue
        for line, name, n in scan(f, args.limit):
            print(f"{f}:{line}: {name} is {n} lines (limit {args.limit})")
            bad += 1
    if bad:
        print(f"{bad} function(s) longer than {args.limit} lines", file=sys.stderr)
        return 1
    print(f"function lengths: {len(files)} files, every function <= {args.limit} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
