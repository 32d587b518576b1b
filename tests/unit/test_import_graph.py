"""The package's import graph (every `import fastlab.x` / `from fastlab.x import`, also inside
functions): no import circle. The last one, spec <-> topology, ended when the semantic checks moved
to fastlab/plan.py; a new circle fails this test."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "fastlab"
KNOWN_CIRCLES: set[frozenset[str]] = set()  # spec <-> topology ended when fastlab/plan.py took the semantic checks


def module_name(path: Path) -> str:
    """fastlab/x.py -> "x"; fastlab/cli/run.py -> "cli.run"; fastlab/cli/__init__.py -> "cli"."""
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, modules: set[str]) -> set[str]:
    """Modules of the package (names as module_name gives them) that a module imports."""
    def resolve(dotted: str) -> str:  # the longest package module the dotted name starts with
        parts = dotted.split(".")
        for n in range(len(parts), 0, -1):
            if ".".join(parts[:n]) in modules:
                return ".".join(parts[:n])
        return parts[0]

    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("fastlab"):
            rest = node.module.removeprefix("fastlab").lstrip(".")
            # from fastlab import a, b / from fastlab.cli import run: each name may be a module
            out |= {resolve(f"{rest}.{alias.name}" if rest else alias.name) for alias in node.names}
        elif isinstance(node, ast.Import):
            out |= {resolve(a.name.removeprefix("fastlab.")) for a in node.names if a.name.startswith("fastlab.")}
    return out - {module_name(path)}


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
    files = [p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts]
    modules = {module_name(p) for p in files}
    graph = {module_name(p): imports(p, modules) for p in files}
    assert {"cli", "cli.run", "cli.common", "sweep", "spec"} <= set(graph)  # subpackages are walked too
    assert "cli.common" in graph["cli.run"] and "sweep" in graph["cli.sweep"]
    assert circles(graph) == KNOWN_CIRCLES


def test_the_circle_finder_finds_circles() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == {frozenset({"a", "b", "c"})}
    assert circles({"a": {"b"}, "b": set()}) == set()


MAX_MODULE_LINES = 500
# Python modules over MAX_MODULE_LINES, each with the reason it stays one module (issue 13). A module
# that grows past the limit fails until it is split or given a reason here; one that shrinks below
# it fails until its entry goes, so no reason outlives its module.
LONG_MODULES = {
    "fastlab/labs.py": "the lab format and the one API lab authors' checkpoints.py import (StepRun, "
                       "CheckResult, within, loss_starts...): a split would change every lab's imports",
    "fastlab/spec.py": "the one spec schema (DESIGN.md: experiments are data, one schema for the CLI, the web "
                       "app, labs and bundles): every field with its range and its one-line error path",
    "fastlab/shaping.py": "the one link planner: a link profile resolved per direction, its backend chosen and "
                          "turned into tc commands or the emulator's arguments, kept pure beside its executor",
}


def test_no_module_is_long_without_a_stated_reason() -> None:
    root = PACKAGE.parent
    long = {str(p.relative_to(root)): n for folder in ("fastlab", "webapp", "topologies", "controllers", "bench")
            for p in (root / folder).rglob("*.py")
            if "__pycache__" not in p.parts and (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES}
    assert set(long) == set(LONG_MODULES), f"modules over {MAX_MODULE_LINES} lines: {long}"


MAX_FUNCTION_LINES = 80


def test_no_function_of_the_package_is_over_80_lines() -> None:
    """Issue 35: a function that long does several jobs (run_experiment was 157 lines; it now reads as
    its phases, each a function of the run's parts)."""
    long = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(PACKAGE.parent)}:{node.name}"] = n
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"


def test_flows_are_numbered_in_one_place() -> None:
    """Issue 35: flow ids (f1, f2, ...) were built in three modules; fastlab.spec.numbered_flows is the one."""
    import re

    builders = [str(p.relative_to(PACKAGE.parent)) for p in PACKAGE.rglob("*.py")
                if re.search(r'f"f\{', p.read_text())]
    assert builders == ["fastlab/spec.py"], builders


def _calls(node: ast.AST, where: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], ast.Call]]:
    """Every call under `node` with the functions and classes it is inside (outermost first)."""
    out = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Call):
            out.append((where, child))
        named = isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        out += _calls(child, (*where, child.name) if named else where)
    return out


@functools.cache
def _project_calls() -> tuple[tuple[str, frozenset[str], tuple[tuple[str, ...], ast.Call]], ...]:
    """Every call of the project's code: (file, the fastlab.x.name it imports by name, (where, call)),
    each file parsed once for all the checks."""
    root = PACKAGE.parent
    out = []
    for folder in ("fastlab", "webapp", "bench", "labs", "topologies", "controllers"):
        for path in (root / folder).rglob("*.py"):
            tree = ast.parse(path.read_text())
            imported = frozenset(f"{n.module}.{a.name}" for n in ast.walk(tree)
                                 if isinstance(n, ast.ImportFrom) and n.module for a in n.names)
            out += [(str(path.relative_to(root)), imported, call) for call in _calls(tree)]
    return tuple(out)


def callers(name: str, module: str) -> set[str]:
    """Every function (file:function, methods as Class.method) of the project's code that calls
    fastlab.`module`.`name`: as `module.name(...)`, or as `name(...)` in `module` itself or in a file that
    imports it from there. A function calling itself (recursion) is not counted."""
    out = set()
    for path, imported, (where, call) in _project_calls():
        bare = path == f"fastlab/{module}.py" or f"fastlab.{module}.{name}" in imported
        f = call.func
        direct = isinstance(f, ast.Attribute) and f.attr == name and \
            isinstance(f.value, ast.Name) and f.value.id == module
        called = bare and isinstance(f, ast.Name) and f.id == name and where[-1:] != (name,)
        if direct or called:
            out.add(f"{path}:{'.'.join(where) or '<module>'}")
    return out


def test_backends_are_chosen_and_routes_followed_in_one_place() -> None:
    """Issue 35: the backend was chosen twice (plan.py and shaping.plan_link) and routes and path figures
    recomputed in the verdict, the cost prediction and the theory; the run's plan (fastlab.plan) now
    does each once and everything after reads it."""
    assert callers("choose_backend", "shaping") == {"fastlab/plan.py:prepare"}
    assert callers("hops", "routing") == {"fastlab/plan.py:trace"}
    assert callers("figures", "routing") == {"fastlab/plan.py:Routes.figures"}
    assert callers("numbered_flows", "spec") <= {"fastlab/spec.py:numbered_flows", "fastlab/plan.py:_validate_paths",
                                                 "fastlab/traffic.py:expand_flows"}


def test_the_callers_check_sees_calls() -> None:
    assert "fastlab/plan.py:layout" in callers("idle_links", "routing")
    assert "fastlab/engine.py:run_experiment" in callers("prepare", "plan")
