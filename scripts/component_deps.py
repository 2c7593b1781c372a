#!/usr/bin/env python3
"""The dependency graph of trainscope's components, its cycles and its layers.

A component is a folder under src/ with its public headers under
include/trainscope/<component>/. Component A depends on B when a file of A
(src/A/**, include/trainscope/A/**) includes "trainscope/B/...". The torch
half of a component (a torch/ subfolder or *_torch files) counts as the
component. Prints each component's dependencies; with --check exits 1 and
names every cycle (A -> B -> ... -> A) when there is one.

The layers are src/README.md's "## Layers" list, bottom first:

  1. **foundation** — core, config, ...
  2. **events** — instrument

A component may include only components of its own layer or below, but
for the edges the same section allows upward, each on a line of its own:

  - profile → train: why

With --check every component of src/ must be in exactly one layer, every
upward dependency must be allowed there, and every allowed one must still
exist; each one that is not is named, and the exit code is 1. A tree whose
src/README.md has no "## Layers" (tests/data/cycle_tree) has its cycles
checked only. --self-test checks a temporary tree with known violations
and exits 0 only when exactly those are named.

  scripts/component_deps.py [--check] [--dot] [--root TREE]
  scripts/component_deps.py --self-test
"""
import os
import re
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INCLUDE = re.compile(r'^\s*#\s*include\s+"trainscope/([a-z_]+)/', re.M)


def files_of(component):
    for base in (os.path.join(ROOT, "src", component),
                 os.path.join(ROOT, "include", "trainscope", component)):
        for folder, _, names in os.walk(base):
            for n in names:
                if n.endswith((".cc", ".h", ".in")):
                    yield os.path.join(folder, n)


def graph():
    src = os.path.join(ROOT, "src")
    components = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
    deps = {}
    for c in components:
        found = set()
        for f in files_of(c):
            with open(f, encoding="utf-8", errors="replace") as fh:
                found.update(INCLUDE.findall(fh.read()))
        deps[c] = sorted(found - {c})
    return deps


def cycles(deps):
    """Every elementary cycle's smallest member first, each once (Johnson's
    idea on a small graph: a DFS from each node over larger nodes)."""
    out = []
    nodes = sorted(deps)
    for start in nodes:
        stack = [(start, [start])]
        while stack:
            node, path = stack.pop()
            for nxt in deps.get(node, []):
                if nxt == start:
                    out.append(path + [start])
                elif nxt > start and nxt not in path:
                    stack.append((nxt, path + [nxt]))
    return out


LAYER = re.compile(r"^\d+\.\s+\*\*(.+?)\*\*\s+—\s+(.+)$")
ALLOWED = re.compile(r"^-\s+([a-z_]+)\s+→\s+([a-z_]+):")


def layers():
    """(layers, allowed): [(name, [components])] bottom first and the set of
    (A, B) allowed upward, from src/README.md's "## Layers"; None when the
    README has no such section."""
    path = os.path.join(ROOT, "src", "README.md")
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    m = re.search(r"^## Layers\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    if not m:
        return None
    found, allowed = [], set()
    for line in m.group(1).split("\n"):
        if (lm := LAYER.match(line.strip())):
            names = [c.strip() for c in re.sub(r"\(.*?\)", "", lm.group(2)).split(",")]
            found.append((lm.group(1), [c for c in names if c]))
        elif (am := ALLOWED.match(line.strip())):
            allowed.add((am.group(1), am.group(2)))
    # A capability in a folder of its own (its CMakeLists.txt calls
    # trainscope_unit) is in the capabilities layer without a line here.
    for name, comps in found:
        if name == "capabilities":
            comps.extend(u for u in unit_folders() if u not in comps)
    return found, allowed


def unit_folders():
    """The folders of src/ whose CMakeLists.txt calls trainscope_unit()."""
    src = os.path.join(ROOT, "src")
    out = []
    for d in sorted(os.listdir(src)):
        path = os.path.join(src, d, "CMakeLists.txt")
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as fh:
                if re.search(r"^\s*trainscope_unit\(", fh.read(), re.M):
                    out.append(d)
    return out


def layer_problems(deps, found, allowed):
    """One line for each component in no layer or in two, each upward
    dependency not allowed, and each allowed one that no longer exists."""
    problems, level = [], {}
    for i, (name, comps) in enumerate(found):
        for c in comps:
            if c in level:
                problems.append(f"{c} is in two layers ({found[level[c]][0]}, {name})")
            level.setdefault(c, i)
    for c in deps:
        if c not in level:
            problems.append(f"{c} is in no layer of src/README.md (## Layers)")
    for c in level:
        if c not in deps:
            problems.append(f"{c} is in layer {found[level[c]][0]} but is no folder of src/")
    for a, ds in deps.items():
        for b in ds:
            if a in level and b in level and level[b] > level[a] and (a, b) not in allowed:
                problems.append(f"{a} ({found[level[a]][0]}) depends on {b}, a layer above it "
                                f"({found[level[b]][0]})")
    for a, b in sorted(allowed):
        if b not in deps.get(a, []):
            problems.append(f"{a} → {b} is allowed upward but {a} no longer depends on {b}")
    return problems


def self_test():
    """A tree with a reader that includes train, a capability that includes
    a reader (one of them a unit in a folder of its own), an allowed upward
    edge, a component in no layer and a stale allowance: exactly those must
    be named."""
    global ROOT
    files = {
        "src/README.md": "# x\n\n## Layers\n\n1. **foundation** — core\n"
                         "2. **capabilities** — profile, metrics\n3. **readers** — repro\n"
                         "4. **training** — train\n\n- profile → train: its grid trains\n"
                         "- metrics → train: stale\n\n## Next\n",
        "src/core/a.cc": "",
        "src/profile/grid.cc": '#include "trainscope/train/t.h"\n',
        "src/metrics/m.cc": '#include "trainscope/repro/r.h"\n',
        "src/repro/r.cc": '#include "trainscope/train/t.h"\n#include "trainscope/core/c.h"\n',
        "src/train/t.cc": '#include "trainscope/core/c.h"\n',
        "src/extra/e.cc": "",
        "src/unitx/CMakeLists.txt": "trainscope_unit(unitx SOURCES u.cc)\n",
        "src/unitx/u.cc": '#include "trainscope/repro/r.h"\n',
    }
    expected = {
        "extra is in no layer of src/README.md (## Layers)",
        "metrics (capabilities) depends on repro, a layer above it (readers)",
        "unitx (capabilities) depends on repro, a layer above it (readers)",
        "repro (readers) depends on train, a layer above it (training)",
        "metrics → train is allowed upward but metrics no longer depends on train",
    }
    with tempfile.TemporaryDirectory() as tmp:
        for rel, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(tmp, rel)), exist_ok=True)
            with open(os.path.join(tmp, rel), "w", encoding="utf-8") as fh:
                fh.write(text)
        ROOT = tmp
        found, allowed = layers()
        got = set(layer_problems(graph(), found, allowed))
    if got != expected:
        print("component_deps --self-test: expected", sorted(expected), "got", sorted(got),
              file=sys.stderr)
        return 1
    print(f"component_deps --self-test: the {len(got)} layer problems found")
    return 0


def main():
    global ROOT
    if "--self-test" in sys.argv:
        return self_test()
    if "--root" in sys.argv:
        ROOT = os.path.abspath(sys.argv[sys.argv.index("--root") + 1])
    deps = graph()
    if "--dot" in sys.argv:
        print("digraph components {")
        for c, ds in deps.items():
            for d in ds:
                print(f'  "{c}" -> "{d}";')
        print("}")
        return 0
    for c, ds in deps.items():
        print(f"{c:12} -> {', '.join(ds) if ds else '(nothing)'}")
    found = cycles(deps)
    for cyc in found:
        print("cycle: " + " -> ".join(cyc))
    if not found:
        print("no cycle")
    layered = layers()
    problems = layer_problems(deps, *layered) if layered else []
    for p in problems:
        print("layer: " + p)
    if layered and not problems:
        print(f"no dependency up the {len(layered[0])} layers of src/README.md but the "
              f"{len(layered[1])} it allows")
    if "--check" in sys.argv and (found or problems):
        if found:
            print(f"{len(found)} cycle(s) among the components of src/", file=sys.stderr)
        if problems:
            print(f"{len(problems)} layer problem(s) (src/README.md, ## Layers)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
