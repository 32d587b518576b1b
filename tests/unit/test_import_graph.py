"""The package's import graph (every `import fastlab.x` / `from fastlab.x import`, also inside
functions): the stages in order, and no import circle.

fastlab/ is a pipeline of subpackages (issue 35): each may import its own stage and the stages before it,
never one after it, so the layout reads in the order a run happens. fastlab/cli (and webapp/, beside it)
may import any stage; no stage imports the command line or the web app. The last circle, spec <->
topology, ended when the semantic checks moved to the plan (fastlab/plan/prepare.py)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "fastlab"
KNOWN_CIRCLES: set[frozenset[str]] = set()
# The stages, first to last (each subpackage's docstring says its role and what it may import).
STAGES = ("base", "define", "plan", "net", "run", "measure", "theory", "results", "experiment", "service", "labs",
          "sweep", "cli")
TOP = {"", "__main__"}  # fastlab/__init__.py and `python -m fastlab` (which is the command line)


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


def package_graph() -> dict[str, set[str]]:
    files = [p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts]
    modules = {module_name(p) for p in files}
    return {module_name(p): imports(p, modules) for p in files}


def test_no_new_import_circles() -> None:
    graph = package_graph()
    assert {"cli", "cli.run", "cli.common", "sweep.points", "define.schema"} <= set(graph)  # subpackages are walked
    assert "cli.common" in graph["cli.run"] and "sweep.points" in graph["cli.sweep"]
    assert circles(graph) == KNOWN_CIRCLES


def stage(module: str) -> str:
    """The stage a module belongs to: its subpackage ("plan.routing" -> "plan")."""
    return module.split(".")[0]


def backward_imports(graph: dict[str, set[str]]) -> set[str]:
    """Imports of a later stage by an earlier one ("plan.prepare -> net.shaping")."""
    order = {name: i for i, name in enumerate(STAGES)}
    return {f"{m} -> {d}" for m, deps in graph.items() if m not in TOP for d in deps
            if d not in TOP and order[stage(d)] > order[stage(m)]}


def test_every_module_is_in_a_stage_and_imports_only_earlier_stages() -> None:
    """Issue 35 item 2: the layout shows the pipeline; an import against the order fails here, naming it."""
    graph = package_graph()
    outside = {m for m in graph if m not in TOP and stage(m) not in STAGES}
    assert not outside, f"modules outside the stages {STAGES}: {sorted(outside)}"
    for name in STAGES:  # each stage says its role and what it may import
        doc = ast.get_docstring(ast.parse((PACKAGE / name / "__init__.py").read_text())) or ""
        assert "may import" in doc.lower() or name == "cli", f"fastlab/{name}/__init__.py: no stated role and imports"
    assert backward_imports(graph) == set()


def test_the_stage_check_sees_a_backward_import() -> None:
    assert backward_imports({"plan.prepare": {"net.shaping", "define.schema"}, "net.shaping": {"plan.links"},
                             "cli.run": {"experiment.engine"}, "": {"cli"}}) == {"plan.prepare -> net.shaping"}


def test_no_stage_imports_the_web_app() -> None:
    """webapp/ sits beside the command line: it imports the stages, never the other way."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found += [f"{path.relative_to(PACKAGE.parent)}: {n}" for n in names if n.split(".")[0] == "webapp"]
    assert not found, found


def test_the_circle_finder_finds_circles() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == {frozenset({"a", "b", "c"})}
    assert circles({"a": {"b"}, "b": set()}) == set()


MAX_MODULE_LINES = 500
# Python modules over MAX_MODULE_LINES, each with the reason it stays one module (issue 13). A module
# that grows past the limit fails until it is split or given a reason here; one that shrinks below
# it fails until its entry goes, so no reason outlives its module.
LONG_MODULES = {
    "fastlab/labs/kit.py": "the lab format and the one API lab authors' checkpoints.py import (StepRun, "
                           "CheckResult, within, loss_starts...): a split would change every lab's imports",
    "fastlab/define/schema.py": "the one spec schema (docs/design.md: experiments are data, one schema for the CLI, "
                              "the web app, labs and bundles): every field with its range and its one-line error path",
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
    """Issue 35: flow ids (f1, f2, ...) were built in three modules; fastlab.define.schema.numbered_flows is the one."""
    import re

    builders = [str(p.relative_to(PACKAGE.parent)) for p in PACKAGE.rglob("*.py")
                if re.search(r'f"f\{', p.read_text())]
    assert builders == ["fastlab/define/schema.py"], builders


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
def _project_calls() -> tuple[tuple[str, dict[str, str], tuple[tuple[str, ...], ast.Call]], ...]:
    """Every call of the project's code: (file, what each name it imports by `from` stands for (bound name ->
    fastlab.x.name), (where, call)), each file parsed once for all the checks."""
    root = PACKAGE.parent
    out = []
    for folder in ("fastlab", "webapp", "bench", "labs", "topologies", "controllers"):
        for path in (root / folder).rglob("*.py"):
            tree = ast.parse(path.read_text())
            bound = {a.asname or a.name: f"{n.module}.{a.name}" for n in ast.walk(tree)
                     if isinstance(n, ast.ImportFrom) and n.module for a in n.names}
            out += [(str(path.relative_to(root)), bound, call) for call in _calls(tree)]
    return tuple(out)


def callers(name: str, module: str) -> set[str]:
    """Every function (file:function, methods as Class.method) of the project's code that calls
    fastlab.`module`.`name` (`module` dotted from the package: "plan.routing"): as `m.name(...)` where m is
    the module imported under any name, or as `name(...)` in `module` itself or in a file that imports it
    from there. A function calling itself (recursion) is not counted."""
    out = set()
    for path, bound, (where, call) in _project_calls():
        bare = path == f"fastlab/{module.replace('.', '/')}.py" or bound.get(name) == f"fastlab.{module}.{name}"
        f = call.func
        direct = isinstance(f, ast.Attribute) and f.attr == name and \
            isinstance(f.value, ast.Name) and bound.get(f.value.id) == f"fastlab.{module}"
        called = bare and isinstance(f, ast.Name) and f.id == name and where[-1:] != (name,)
        if direct or called:
            out.add(f"{path}:{'.'.join(where) or '<module>'}")
    return out


def test_backends_are_chosen_and_routes_followed_in_one_place() -> None:
    """Issue 35: the backend was chosen twice (plan.py and shaping.plan_link) and routes and path figures
    recomputed in the verdict, the cost prediction and the theory; the run's plan (fastlab.plan.prepare) now
    does each once and everything after reads it."""
    assert callers("choose_backend", "plan.link_commands") == {"fastlab/plan/prepare.py:prepare"}
    assert callers("hops", "plan.routing") == {"fastlab/plan/prepare.py:trace"}
    assert callers("figures", "plan.routing") == {"fastlab/plan/prepare.py:Routes.figures"}
    assert callers("numbered_flows", "define.schema") <= {
        "fastlab/define/schema.py:numbered_flows", "fastlab/plan/prepare.py:_validate_paths",
        "fastlab/plan/flows.py:expand_flows"}


def test_the_callers_check_sees_calls() -> None:
    assert "fastlab/plan/prepare.py:layout" in callers("idle_links", "plan.routing")
    assert "fastlab/experiment/engine.py:prepare_run" in callers("prepare", "plan.prepare")
