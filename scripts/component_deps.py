#!/usr/bin/env python3
"""The dependency graph of trainscope's components, and its cycles.

A component is a folder under src/ with its public headers under
include/trainscope/<component>/. Component A depends on B when a file of A
(src/A/**, include/trainscope/A/**) includes "trainscope/B/...". The torch
half of a component (a torch/ subfolder or *_torch files) counts as the
component. Prints each component's dependencies; with --check exits 1 and
names every cycle (A -> B -> ... -> A) when there is one.

  scripts/component_deps.py [--check] [--dot] [--root TREE]
"""
import os
import re
import sys

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


def main():
    global ROOT
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
    if "--check" in sys.argv and found:
        print(f"{len(found)} cycle(s) among the components of src/", file=sys.stderr)
        return 1
    if not found:
        print("no cycle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
