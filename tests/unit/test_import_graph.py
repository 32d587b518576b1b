"""The package's import graph (every `import fastlab.x` / `from fastlab.x import`, also inside
functions): no import circle beyond the one still listed here, which issue 13's plan layer is to
remove. A new circle fails this test; removing a listed one fails it too, so the list
shrinks with the code."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "fastlab"
KNOWN_CIRCLES = {
    frozenset({"spec", "topology"}),  # the semantic validation in spec.py: the plan layer is to own it
}


def imports(path: Path) -> set[str]:
    """Modules of the package that a module imports, by short name."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("fastlab"):
            parts = node.module.split(".")
            if len(parts) > 1:
                out.add(parts[1])
            else:  # from fastlab import a, b
                out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.Import):
            out |= {a.name.split(".")[1] for a in node.names if a.name.startswith("fastlab.")}
    return out - {path.stem}


def circles(graph: dict[str, set[str]]) -> set[frozenset[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: set[frozenset[str]] = set()

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = set()
            while True:
                top = stack.pop()
                component.add(top)
                if top == node:
                    break
            if len(component) > 1:
                found.add(frozenset(component))

    for node in graph:
        if node not in index:
            visit(node)
    return found


def test_no_new_import_circles() -> None:
    graph = {p.stem: imports(p) for p in PACKAGE.glob("*.py")}
    assert circles(graph) == KNOWN_CIRCLES


def test_the_circle_finder_finds_circles() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == {frozenset({"a", "b", "c"})}
    assert circles({"a": {"b"}, "b": set()}) == set()
