#!/usr/bin/env python3
"""Every public declaration of include/trainscope says what it promises.

A public declaration is a function, class/struct/union, enum, alias (using X
= ..., typedef) or variable/constant at namespace scope, or a member of a
class in its public section (a struct's members are public until it says
otherwise). It has a contract when a comment ends on the line immediately
above it (above its `template <...>` line, if any) or trails its first or
last line. Prints `file:line: <decl> has no contract` for each that has none
and exits 1 if there is one.

What needs no comment of its own:
  - a data member, when its class or struct has a contract (the struct's
    comment says what its fields are; a field may still add its own);
  - a one-line inline member function (a getter `T name() const { return
    x_; }`, a call forwarded `void f(A a) { impl_->f(a); }`) directly below
    a documented one: such one-liners may be grouped under one comment;
  - an overload directly below a documented overload of the same name;
  - a declaration that is `= delete` or `= default`, or that overrides a
    base's (`override`, `final`): the base's contract is the promise;
  - forward declarations, friends, using-declarations and using-directives,
    static_asserts, macro invocations and the preprocessor;
  - anything in a namespace named detail or an anonymous one, in a class's
    private or protected section, out-of-line definitions (A::f), and the
    definition of a function declared higher up in the same header (a
    template's body at the end of its header).
Lines are read as written: comments and string literals are set aside,
braces are matched, no header is compiled.

  scripts/contracts_check.py [--root TREE] [--count] [FILE...]
  scripts/contracts_check.py --self-test

FILE... checks those headers only (the allowlist does not apply to them);
--count prints how many declarations were checked and how many lack a
contract; --self-test checks a header written to a temporary folder and
exits 0 only when exactly its undocumented declarations are found.
"""
import argparse
import os
import re
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Headers others are rewriting now; the check skips them until they land.
# Being edited in issue 47/51; remove.
ALLOWLIST = set()

# A member function declared and defined on one line: `int a() const {
# return a_; }`, `void f(int x) { g(x); }`.
ONE_LINER = re.compile(r"^\s*[^(]*\w\s*\(.*\)\s*(const\s*)?(noexcept\s*)?\{.*\}\s*$")
MACRO_CALL = re.compile(r"^[A-Z_][A-Z0-9_]*\s*\(")
ACCESS = re.compile(r"^(public|private|protected)\s*$")
# A section's title ("// --- JSON -----"): no declaration's contract.
BANNER = re.compile(r"^//\s*[-=]{2,}.*[-=]{3,}\s*$")


class Lines:
    """A header's code with comments and literals blanked out, and for each
    line whether a comment ends on it and whether it holds code."""

    def __init__(self, text):
        raw = text.split("\n")
        code_lines, comment_end, banner = [], [], []
        in_block = False
        for line in raw:
            out, had_comment, i = [], False, 0
            stripped = line.strip()
            if not in_block and stripped.startswith("#"):
                code_lines.append("")
                comment_end.append(False)
                banner.append(False)
                continue
            while i < len(line):
                if in_block:
                    j = line.find("*/", i)
                    had_comment = True
                    if j < 0:
                        i = len(line)
                    else:
                        in_block, i = False, j + 2
                    continue
                c = line[i]
                if line.startswith("//", i):
                    had_comment = True
                    break
                if line.startswith("/*", i):
                    in_block, i = True, i + 2
                    had_comment = True
                    continue
                if c == "'" and i > 0 and line[i - 1].isalnum() and \
                        i + 1 < len(line) and line[i + 1].isalnum():
                    out.append(c)  # a digit separator: 1'000'000
                    i += 1
                    continue
                if c == '"' or c == "'":
                    j = i + 1
                    while j < len(line) and line[j] != c:
                        j += 2 if line[j] == "\\" else 1
                    out.append(c + c)
                    i = j + 1
                    continue
                out.append(c)
                i += 1
            code_lines.append("".join(out))
            comment_end.append(had_comment and not in_block)
            banner.append(BANNER.match(stripped) is not None)
        # Continued preprocessor lines (a #define over several lines).
        for n, line in enumerate(raw):
            if line.strip().startswith("#"):
                m = n
                while raw[m].rstrip().endswith("\\") and m + 1 < len(raw):
                    m += 1
                    code_lines[m] = ""
        self.code = code_lines
        self.comment = comment_end
        self.banner = banner

    def has_code(self, n):
        return bool(self.code[n].strip())

    def comment_above(self, n):
        """A comment ends on the line above line n (0-based), and that line
        holds no code of its own."""
        return n > 0 and self.comment[n - 1] and not self.has_code(n - 1) and \
            not self.banner[n - 1]

    def trailing_comment(self, n):
        return self.comment[n] and self.has_code(n)


class Scope:
    def __init__(self, kind, name, public, access="public", documented=False):
        self.kind, self.name, self.public = kind, name, public
        self.access, self.documented = access, documented


def strip_template(text):
    """The declaration without its leading `template <...>` and attributes."""
    text = text.strip()
    while True:
        m = re.match(r"template\s*<", text)
        if m:
            depth, i = 1, m.end()
            while i < len(text) and depth:
                depth += {"<": 1, ">": -1}.get(text[i], 0)
                i += 1
            text = text[i:].strip()
            continue
        m = re.match(r"\[\[[^\]]*\]\]\s*", text)
        if m:
            text = text[m.end():]
            continue
        return text


def function_name(text):
    """The declarator's name of a function declaration, or None when `text`
    declares a variable."""
    if "operator" in text:
        m = re.search(r"([\w:~]*operator\s*(\(\)|[^\s(]+|\s\w[\w\s:<>*&]*?))\s*\(", text)
        return m.group(1).strip() if m else "operator"
    angle = 0
    for i, c in enumerate(text):
        if c == "<":
            angle += 1
        elif c == ">":
            angle -= 1
        elif c in "={" and angle == 0:
            return None
        elif c == "(" and angle == 0:
            m = re.search(r"([\w:~]+)\s*$", text[:i])
            return m.group(1) if m else None
    return None


def variable_name(text):
    t = re.split(r"[={;]", text, 1)[0]
    t = re.sub(r"\[[^\]]*\]\s*$", "", t.strip())
    m = re.search(r"([\w:]+)\s*$", t)
    return m.group(1) if m else t.strip()


class Checker:
    def __init__(self, path, display):
        with open(path, encoding="utf-8", errors="replace") as fh:
            self.lines = Lines(fh.read())
        self.display = display
        self.found = []  # (line, description)
        self.checked = 0
        # The last line of a run of documented one-line inline members or
        # constants, and which of the two it is.
        self.group_end, self.group_kind = -2, None
        # The functions declared so far, by qualified name.
        self.declared = set()
        # The last function: its last line, qualified name, and whether it
        # is documented.
        self.last_function = (-2, None, False)

    # --- the scan -------------------------------------------------------

    def run(self):
        code = self.lines.code
        stack = [Scope("file", "", True)]
        buf, start = [], None
        n, i = 0, 0
        paren = 0
        while n < len(code):
            line = code[n]
            if i >= len(line):
                if buf:
                    buf.append(" ")
                n, i = n + 1, 0
                continue
            c = line[i]
            if c.isspace() and not buf:
                i += 1
                continue
            if start is None:
                start = n
            scope = stack[-1]
            if c in "([":
                paren += 1
            elif c in ")]":
                paren -= 1
            elif paren == 0 and c == ":" and scope.kind == "class" and \
                    ACCESS.match("".join(buf).strip()) and not line.startswith("::", i):
                scope.access = "".join(buf).strip()
                buf, start = [], None
                i += 1
                continue
            elif paren == 0 and c == ";":
                self.declaration("".join(buf), start, n, stack)
                buf, start = [], None
                i += 1
                continue
            elif paren == 0 and c == "{":
                text = strip_template("".join(buf))
                head = text.split()
                public = all(s.public and (s.kind != "class" or s.access == "public")
                             for s in stack)
                if head[:1] == ["namespace"]:
                    name = head[1] if len(head) > 1 else ""
                    stack.append(Scope("ns", name, public and name not in ("", "detail")
                                       and not name.endswith("::detail")))
                elif head[:1] == ["extern"]:
                    stack.append(Scope("ns", "", public))
                elif re.match(r"(class|struct|union)\b", text) and "(" not in text.split(":")[0] \
                        and "=" not in text:
                    name = re.match(r"(class|struct|union)\s+(\[\[[^\]]*\]\]\s*)?(\w*)", text)
                    name = name.group(3) if name else ""
                    documented = self.covered(start, n)
                    if public and name:
                        self.report(start, n, documented, f"{head[0]} {self.qualified(stack, name)}")
                    stack.append(Scope("class", name, public,
                                       "private" if head[0] == "class" else "public", documented))
                elif re.search(r"(^|[^=!<>])=([^=]|$)", text):
                    # Braces inside an initializer (`= size_t{64} << 20`):
                    # the declaration goes on to its `;`.
                    n, i = self.skip_braces(n, i)
                    buf.append("{}")
                    continue
                else:
                    # A function's body or an initializer: the declaration
                    # ends with it.
                    n, i = self.skip_braces(n, i)
                    self.declaration("".join(buf), start, n, stack, braced=True)
                    buf, start = [], None
                    n, i = self.eat_semicolon(n, i)
                    continue
                buf, start = [], None
                i += 1
                continue
            elif paren == 0 and c == "}":
                if len(stack) > 1:
                    closed = stack.pop()
                    if closed.kind == "class":
                        # `} name;` or `};`
                        n, i = self.skip_to_semicolon(n, i + 1)
                        buf, start = [], None
                        continue
                buf, start = [], None
                i += 1
                continue
            buf.append(c)
            i += 1
        return self.found

    def skip_braces(self, n, i):
        """From the `{` at (n, i) to just past its `}`."""
        depth = 0
        code = self.lines.code
        while n < len(code):
            line = code[n]
            while i < len(line):
                if line[i] == "{":
                    depth += 1
                elif line[i] == "}":
                    depth -= 1
                    if depth == 0:
                        return n, i + 1
                i += 1
            n, i = n + 1, 0
        return n, 0

    def eat_semicolon(self, n, i):
        code = self.lines.code
        while n < len(code):
            rest = code[n][i:]
            if rest.strip():
                s = rest.lstrip()
                if s.startswith(";"):
                    return n, i + (len(rest) - len(s)) + 1
                return n, i
            n, i = n + 1, 0
        return n, i

    def skip_to_semicolon(self, n, i):
        code = self.lines.code
        while n < len(code):
            j = code[n].find(";", i)
            if j >= 0:
                return n, j + 1
            n, i = n + 1, 0
        return n, i

    # --- one declaration ----------------------------------------------

    def declaration(self, raw, start, end, stack, braced=False):
        if start is None:
            return
        scope = stack[-1]
        if not all(s.public and (s.kind != "class" or s.access == "public") for s in stack):
            return
        text = " ".join(raw.split())
        body = strip_template(text)
        if not body or MACRO_CALL.match(body):
            return
        first = body.split()[0]
        if first in ("friend", "static_assert") or body.startswith("using namespace"):
            return
        if first == "using" and "=" not in body:
            return  # a using-declaration
        if not braced and (re.match(
                r"(class|struct|union|enum(\s+class|\s+struct)?)\s+[\w:]+\s*(:\s*[\w:]+\s*)?$",
                body) or re.match(r"(class|struct|union)\s+\[\[", body)):
            return  # a forward declaration
        if re.search(r"=\s*(delete|default)\s*$", body):
            return
        if first in ("using", "typedef"):
            m = re.match(r"using\s+(\w+)", body) if first == "using" else \
                re.search(r"(\w+)\s*(\[[^\]]*\])?\s*$", body)
            name = m.group(1) if m else body
            self.report(start, end, self.covered(start, end), f"alias {self.qualified(stack, name)}")
            return
        if re.match(r"enum\b", body):
            m = re.match(r"enum\s+(class\s+|struct\s+)?(\w+)", body)
            name = m.group(2) if m else "(anonymous)"
            self.report(start, end, self.covered(start, end), f"enum {self.qualified(stack, name)}")
            return
        fn = function_name(body)
        if fn is not None:
            params_end = body.rfind(")")
            if re.search(r"\b(override|final)\b", body[params_end:] if params_end >= 0 else body):
                return
            if "::" in fn and scope.kind != "class" and not fn.startswith("::"):
                return  # an out-of-line definition of a member
            qualified = self.qualified(stack, fn)
            if braced and qualified in self.declared:
                return  # the definition of a function declared above
            self.declared.add(qualified)
            one_liner = scope.kind == "class" and start == end and \
                ONE_LINER.match(self.lines.code[start]) is not None
            covered = self.grouped(start, end, "one-liner" if one_liner else None)
            # An overload directly below a documented one shares its comment.
            last_end, last_name, last_covered = self.last_function
            if not covered and start == last_end + 1 and last_name == qualified and last_covered:
                covered = True
            self.last_function = (end, qualified, covered)
            kind = "function" if scope.kind != "class" else (
                "constructor" if fn == scope.name else
                "destructor" if fn.startswith("~") else "member function")
            self.report(start, end, covered, f"{kind} {self.qualified(stack, fn)}")
            return
        name = variable_name(body)
        if scope.kind == "class":
            covered = self.covered(start, end) or scope.documented
            self.report(start, end, covered, f"member {self.qualified(stack, name)}")
        else:
            if "::" in name:
                return  # a static member's definition
            covered = self.grouped(start, end, "variable" if start == end else None)
            self.report(start, end, covered, f"variable {self.qualified(stack, name)}")

    def grouped(self, start, end, kind):
        """Covered by its own comment or, for a one-line inline member or a
        one-line constant (`kind`), as the next line of a documented run of
        its kind."""
        covered = self.covered(start, end)
        if kind and not covered and start == self.group_end + 1 and kind == self.group_kind:
            covered = True
        if covered and kind:
            self.group_end, self.group_kind = end, kind
        return covered

    def covered(self, start, end):
        L = self.lines
        return L.comment_above(start) or L.trailing_comment(start) or L.trailing_comment(end)

    def qualified(self, stack, name):
        parts = [s.name for s in stack[1:] if s.name and s.name != "trainscope"]
        parts = [p.replace("trainscope::", "") for p in parts]
        return "::".join(parts + [name])

    def report(self, start, end, covered, what):
        self.checked += 1
        if not covered:
            self.found.append((start + 1, what))


def headers(root):
    base = os.path.join(root, "include", "trainscope")
    for folder, dirs, names in os.walk(base):
        dirs.sort()
        for name in sorted(names):
            if name.endswith(".h"):
                path = os.path.join(folder, name)
                yield path, os.path.relpath(path, base).replace(os.sep, "/")


def check(paths, root, count):
    missing, checked = 0, 0
    for path, rel in paths:
        c = Checker(path, rel)
        c.run()
        checked += c.checked
        for line, what in c.found:
            print(f"{os.path.relpath(path, root)}:{line}: {what} has no contract")
        missing += len(c.found)
    if count:
        print(f"contracts_check: {checked} public declarations, {missing} without a contract")
    return missing


SELF_TEST = """\
// A header of the self-test.
#pragma once
#include <string>

namespace trainscope::selftest {

// Documented.
struct Options {
  int a = 1;
  std::string b;
};

struct Bare {  // a struct with a trailing comment is documented
  int c = 0;
};

class Widget {
 public:
  // Documented constructor.
  explicit Widget(Options o);
  ~Widget();
  Widget(const Widget&) = delete;

  // The getters.
  int a() const { return a_; }
  int b() const { return b_; }
  int undocumented_after_getters(int x);

  void also_undocumented();

 private:
  void hidden();
  int a_ = 0, b_ = 0;
};

enum class Colour { kRed, kBlue };

using Name = std::string;

// Documented function
// over two lines.
template <typename T>
T documented(T x) {
  return x;
}

inline constexpr int kLimit = 3;

int free_function(const std::string& s,
                  int n);

namespace detail {
int not_public();
}  // namespace detail

// Limits, grouped under one comment.
inline constexpr int64_t kBig = 1'000'000;
inline constexpr size_t kShifted = size_t{64} << 20;

inline constexpr int kAlone = 2;

// --- a section's title --------------------------------------------------
int under_a_banner();

class Forwarder {
 public:
  // The events, forwarded.
  void a(int x) { impl(x); }
  void b(int x) { impl(x); }

  void c(int x) { impl(x); }
  void impl(int x) override;
};

// Overloads, documented together.
int overloaded(int x);
int overloaded(double x);

int overloaded_alone(int x);
int overloaded_alone(double x);

}  // namespace trainscope::selftest
"""

SELF_TEST_EXPECTED = [
    (17, "class selftest::Widget"),
    (21, "destructor selftest::Widget::~Widget"),
    (27, "member function selftest::Widget::undocumented_after_getters"),
    (29, "member function selftest::Widget::also_undocumented"),
    (36, "enum selftest::Colour"),
    (38, "alias selftest::Name"),
    (47, "variable selftest::kLimit"),
    (49, "function selftest::free_function"),
    (60, "variable selftest::kAlone"),
    (63, "function selftest::under_a_banner"),
    (65, "class selftest::Forwarder"),
    (71, "member function selftest::Forwarder::c"),
    (79, "function selftest::overloaded_alone"),
    (80, "function selftest::overloaded_alone"),
]


def self_test():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "selftest.h")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(SELF_TEST)
        c = Checker(path, "selftest.h")
        found = c.run()
    if found != SELF_TEST_EXPECTED:
        print("contracts_check --self-test: expected", file=sys.stderr)
        for f in SELF_TEST_EXPECTED:
            print(f"  {f}", file=sys.stderr)
        print("found", file=sys.stderr)
        for f in found:
            print(f"  {f}", file=sys.stderr)
        return 1
    for line, what in found:
        print(f"selftest.h:{line}: {what} has no contract")
    print(f"contracts_check --self-test: the {len(found)} undocumented declarations found")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=ROOT)
    ap.add_argument("--count", action="store_true")
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    if args.files:
        paths = [(f, os.path.basename(f)) for f in args.files]
    else:
        paths = [(p, rel) for p, rel in headers(args.root) if rel not in ALLOWLIST]
    return 1 if check(paths, args.root, args.count) else 0


if __name__ == "__main__":
    sys.exit(main())
