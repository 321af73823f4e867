#!/usr/bin/env python3
"""The import graph of irqlab-core's model and its cycles.

Reads every `crate::model::...` path in `crates/irqlab-core/src/model/`
(the model's files name each other only that way since the folders were
split by tier), takes each as an edge from the file's module to the
longest module prefix it names, and prints the strongly connected
components with more than one module (Tarjan). Issue 33 asks for none.

Usage: python3 tools/rust_import_cycles.py [--fail]
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "crates/irqlab-core/src"


def graph() -> dict[str, set[str]]:
    files = {}
    for p in sorted((ROOT / "model").rglob("*.rs")):
        rel = p.relative_to(ROOT).with_suffix("")
        parts = list(rel.parts[:-1]) if rel.name == "mod" else list(rel.parts)
        files["::".join(parts)] = p.read_text()
    g: dict[str, set[str]] = defaultdict(set)
    for m, text in files.items():
        for path in re.findall(r"crate::(model(?:::[a-z_]+)+)", text):
            parts = path.split("::")
            for n in range(len(parts), 1, -1):
                c = "::".join(parts[:n])
                if c in files:
                    if c != m:
                        g[m].add(c)
                    break
        g.setdefault(m, set())
    return g


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(g[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                out.append(sorted(scc))

    sys.setrecursionlimit(10_000)
    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def main() -> int:
    g = graph()
    found = cycles(g)
    print(f"{len(g)} modules in the model, {sum(map(len, g.values()))} imports, {len(found)} import cycles")
    for c in found:
        print(f"cycle of {len(c)}: {', '.join(c)}")
    return 1 if found and "--fail" in sys.argv[1:] else 0


if __name__ == "__main__":
    sys.exit(main())
