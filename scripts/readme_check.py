#!/usr/bin/env python3
"""Every name a component README gives in backticks exists in the tree.

    scripts/readme_check.py [--root TREE] [README ...]
    scripts/readme_check.py --self-test

Reads src/README.md, every src/<component>/README.md, any README.md under
src/*/torch/ and python/README.md (or the READMEs given) and takes each
`backticked` span outside fenced code blocks. A span that names a file or
a symbol must name one that exists; every other span (a command, a config
key, a metric, a value) is prose and not checked.

A file is a span without blanks that ends in a source or document suffix
(.h .cc .py .md .txt .sh .js .json .yaml .cmake .proto ...), or that holds
a '/' and starts with a top-level folder of the repository (src/, tests/,
docs/, ...), ends in '/' (a folder) or is <component>/torch. It exists when
it is found relative to the README's folder, the repository root, src/,
include/ or include/trainscope/; a bare file name is also found anywhere
under the README's component (src/C/**, include/trainscope/C/**,
tests/C/**; python/** for src/python). {a,b} lists each alternative,
<placeholder>, ... and * match any part of one path component. Inside a
span with blanks (a command line), each word that is a path with a suffix
and a '/' is checked the same way.

A symbol is `ns::Name`, `Name()` (any arguments; `a.b()`, `ns::f()` too),
a `TRAINSCOPE_*` macro or variable (`$TRAINSCOPE_X`, `TRAINSCOPE_X=v` too;
`_SUFFIX` of one), or a bare identifier that is CamelCase (`RunRecorder`,
`kMaxAllPairsCells`), a capitalised word (a type: `Plan`) or holds an '_'
(snake_case); `Type.member` names member. Its last identifier must occur
as a whole word in the code: src/, include/, python/, tests/, bench/,
examples/, scripts/, cmake/, web/ (not node_modules) and the CMake files
(strings count: a config key, an environment variable or a tag is a
symbol when it is one in the code). A trailing '*' (`core::log_*`) matches
a prefix. NOT_IN_TREE lists the few names that are not in the tree by
design (a file the build writes, an artifact's name).

Prints one line per missing name, README:LINE: `token` names nothing in the
tree, and exits 1 when there is one. --self-test checks a temporary README
with a bogus file and a bogus symbol beside real ones, and exits 0 only
when exactly the bogus ones are reported.
"""
import os
import re
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Top-level folders a path may start with.
TOP = {"src", "include", "tests", "docs", "scripts", "bench", "web", "python",
       "cmake", "configs", "examples", "requirements"}
FILE_SUFFIX = re.compile(
    r"\.(h|hpp|cc|cpp|c|py|md|txt|sh|js|mjs|ts|json|yaml|yml|cmake|proto|in|"
    r"R|toml|sql|css|html|supp)$")
CODE_SUFFIX = (".h", ".hpp", ".cc", ".cpp", ".c", ".in", ".py", ".cmake",
               ".txt", ".js", ".mjs", ".ts", ".proto", ".sh", ".R")
CODE_DIRS = ("src", "include", "python", "tests", "bench", "examples",
             "scripts", "cmake", "web")
SKIP_DIRS = {"node_modules", ".git", "__pycache__", "corpus", "cases"}
# Names the READMEs give that are not in the tree by design.
NOT_IN_TREE = {
    "_build.py",           # written by the build (src/python/README.md)
    "git.untracked.txt",   # an artifact's name (src/instrument/README.md)
}
SPAN = re.compile(r"`([^`\n]+(?:\n[^`\n]+)?)`")
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
QUALIFIED = re.compile(r"^[A-Za-z_]\w*(?:::[A-Za-z_~]\w*)+\*?(?:<[^<>]*>)?(?:\([^()]*\))?$")
CALL = re.compile(r"^(?:[A-Za-z_]\w*(?:::|\.))*([A-Za-z_]\w*)(?:<[^<>]*>)?\([^()]*\)$")
MEMBER = re.compile(r"^[A-Z]\w*\.([a-z_]\w*)$")  # TrainOptions.write_checkpoints
BARE = re.compile(r"^[A-Za-z_]\w*\*?$")


def spans(text):
    """(line, token) of each backticked span outside fenced blocks; a span
    may run over one line break, as Markdown allows."""
    out = []
    blanked = []
    fenced = False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            blanked.append("")
            continue
        blanked.append("" if fenced else line)
    body = "\n".join(blanked)
    for m in SPAN.finditer(body):
        line = body.count("\n", 0, m.start()) + 1
        out.append((line, " ".join(m.group(1).split())))
    return out


class Tree:
    def __init__(self, root):
        self.root = root
        self.words = set()
        self.by_name = {}  # file or folder name -> relative paths
        for top in CODE_DIRS + ("docs", "configs", "requirements"):
            base = os.path.join(root, top)
            for folder, dirs, names in os.walk(base):
                dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
                rel = os.path.relpath(folder, root)
                self.by_name.setdefault(os.path.basename(folder), []).append(rel)
                for n in names:
                    self.by_name.setdefault(n, []).append(os.path.join(rel, n))
                    if (top in CODE_DIRS and n.endswith(CODE_SUFFIX)
                            and n != os.path.basename(__file__)):
                        self.read_words(os.path.join(folder, n))
        for n in os.listdir(root):
            if n == "CMakeLists.txt":
                self.read_words(os.path.join(root, n))

    def read_words(self, path):
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                self.words.update(IDENT.findall(fh.read()))
        except OSError:
            pass

    def has_word(self, word):
        if re.match(r"_[A-Z]", word):  # `_WORLD_SIZE` after TRAINSCOPE_DIST
            return any(w.endswith(word) for w in self.words)
        if word.endswith("*"):
            prefix = word[:-1]
            return any(w.startswith(prefix) and w != prefix for w in self.words)
        return word in self.words

    def exists(self, rel):
        """rel, relative to the root, as a glob over one path component for
        <x>, ... and *."""
        if not re.search(r"<[^>]*>|\.\.\.|\*", rel):
            return os.path.exists(os.path.join(self.root, rel))
        pattern = re.escape(rel.rstrip("/"))
        pattern = re.sub(r"\\\*\\\*|\\\*|\\\.\\\.\\\.|<[^>]*>", "[^/]*",
                         pattern.replace(r"\<", "<").replace(r"\>", ">"))
        rx = re.compile(pattern + "$")
        head = rel.split("/")[0]
        return any(rx.match(p) for paths in self.by_name.values() for p in paths
                   if p.startswith(head))


def component_of(readme_rel):
    parts = readme_rel.split("/")
    return parts[1] if len(parts) >= 3 and parts[0] == "src" else None


def is_file_token(tok):
    if " " in tok or tok.startswith(("/", "~", "$", "-", "<")) or "://" in tok:
        return False
    if "=" in tok or ":" in tok:
        return False
    if any(FILE_SUFFIX.search(a) for a in alternatives(tok)):
        return True
    if "/" not in tok:
        return False
    head = tok.split("/")[0]
    if head in TOP or head == "trainscope":
        return True
    if tok.endswith("/"):
        return True
    return bool(re.fullmatch(r"[a-z_]+/torch", tok))


def alternatives(tok):
    m = re.search(r"\{([^{}]*,[^{}]*)\}", tok)
    if not m:
        return [tok]
    return [a for alt in m.group(1).split(",")
            for a in alternatives(tok[:m.start()] + alt + tok[m.end():])]


def file_exists(tree, readme_rel, tok):
    here = os.path.dirname(readme_rel)
    bases = [here, "", "src", "include", "include/trainscope"]
    if any(tree.exists(os.path.normpath(os.path.join(b, tok))) for b in bases):
        return True
    name = tok.rstrip("/")
    if "/" in name:
        return False
    comp = component_of(readme_rel)
    if comp is None:
        owners = [here]
    else:
        owners = [f"src/{comp}", f"include/trainscope/{comp}", f"tests/{comp}"]
        if comp == "python":
            owners.append("python")
    for p in tree.by_name.get(name, []):
        if any(p == o or p.startswith(o + "/") for o in owners):
            return True
    return False


def symbol_of(tok):
    """The identifier a symbol token must name, or None for prose."""
    m = re.match(r"^\$?(TRAINSCOPE_\w+)(=\S*)?$", tok)  # `$TRAINSCOPE_SET`, `..._CACHE=off`
    if m:
        return m.group(1)
    if QUALIFIED.match(tok):
        last = re.sub(r"(<[^<>]*>)?(\([^()]*\))?$", "", tok).split("::")[-1]
        return last
    m = CALL.match(tok)
    if m:
        return m.group(1)
    m = MEMBER.match(tok)
    if m:
        return m.group(1)
    if BARE.match(tok):
        word = tok.rstrip("*")
        camel = len(re.findall(r"[A-Z]", word)) >= 2 and re.search(r"[a-z]", word)
        if "_" in word.strip("_") or (camel and not word.isupper()):
            return tok
        if re.fullmatch(r"[A-Z][a-z][a-z0-9]*", word):  # a type: `Plan`
            return tok
    return None


def check(tree, readme_path, readme_rel):
    with open(readme_path, encoding="utf-8") as fh:
        text = fh.read()
    missing = []
    for line, tok in spans(text):
        if tok in NOT_IN_TREE or tok.startswith("build/"):
            continue
        if is_file_token(tok):
            if not all(file_exists(tree, readme_rel, a) for a in alternatives(tok)):
                missing.append((line, tok))
            continue
        if " " in tok:
            for word in tok.split(" "):
                if ("/" in word and FILE_SUFFIX.search(word)
                        and word.split("/")[0] in TOP
                        and not file_exists(tree, readme_rel, word)):
                    missing.append((line, tok))
                    break
            continue
        sym = symbol_of(tok)
        if sym is not None and not tree.has_word(sym):
            missing.append((line, tok))
    return missing


def default_readmes(root):
    out = []
    src = os.path.join(root, "src")
    if os.path.exists(os.path.join(src, "README.md")):
        out.append("src/README.md")
    for comp in sorted(os.listdir(src)):
        for sub in ("README.md", "torch/README.md"):
            if os.path.isfile(os.path.join(src, comp, sub)):
                out.append(f"src/{comp}/{sub}")
    for name in ("README.md", "README"):
        if os.path.isfile(os.path.join(root, "python", name)):
            out.append(f"python/{name}")
    return out


def run(root, readmes, as_rel=None):
    tree = Tree(root)
    found = []
    for r in readmes:
        path = r if os.path.isabs(r) else os.path.join(root, r)
        rel = as_rel or os.path.relpath(os.path.abspath(path), root)
        for line, tok in check(tree, path, rel):
            found.append(f"{rel}:{line}: `{tok}` names nothing in the tree")
    return found


SELF_TEST = """# core (a test README)

- `error.h` and `src/core/log.cc` exist; `core::Error`, `check_yaml()`,
  `TRAINSCOPE_UNIT`, `RunRecorder` and `store/sqlite_store.{h,cc}` too.
- `no_such_file_here.cc` does not, nor `src/core/gone/`, nor
  `core::NoSuchSymbolAnywhere`, nor `no_such_function_here()`.
- Prose: `train/loss`, `--set a=b`, `dist.nproc`, `sqlite::memory:`.
"""
SELF_TEST_MISSING = {"no_such_file_here.cc", "src/core/gone/",
                     "core::NoSuchSymbolAnywhere", "no_such_function_here()"}


def self_test():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "README.md")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(SELF_TEST)
        found = run(ROOT, [path], as_rel="src/core/README.md")
    for f in found:
        print(f)
    names = {re.search(r"`(.*)`", f).group(1) for f in found}
    if names != SELF_TEST_MISSING:
        print("self-test: expected exactly "
              + ", ".join(sorted(SELF_TEST_MISSING)), file=sys.stderr)
        return 1
    print("self-test: the check names every missing name and only those")
    return 0


def main(argv):
    global ROOT
    args = argv[1:]
    if "--self-test" in args:
        return self_test()
    if "--root" in args:
        i = args.index("--root")
        ROOT = os.path.abspath(args[i + 1])
        del args[i:i + 2]
    readmes = args or default_readmes(ROOT)
    found = run(ROOT, readmes)
    for f in found:
        print(f)
    if found:
        print(f"{len(found)} name(s) in READMEs name nothing in the tree",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
