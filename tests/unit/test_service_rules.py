"""The execution service's rules (issue 48 item 4), held as tests/unit/test_import_graph.py holds the stage
order: one place runs experiments (fastlab.service), one Dask submission path, and a web app that is an
HTTP adaptor over the service, with no queue, admission or Dask code of its own.

Each rule reads the source (ast), so a change that breaks it fails here naming the file; each checker is
also shown a breach, so the rule cannot pass by seeing nothing."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SERVICE = "fastlab/service/"
DASK = {"dask", "distributed"}
# Modules only the service may import from the engine and the cost model: running a run, admitting one.
RUNS_A_RUN = {("fastlab.experiment.engine", "run_experiment")}
ADMITS = {"fastlab.experiment.cost", "fastlab.service.worker"}  # the cost model, the Dask task
# what the queue decides with (the web app may only ask the service for a warning: admission.carry_warning)
ADMITS_NAMES = {("fastlab.service.admission", "Going"), ("fastlab.service.admission", "predicted"),
                ("fastlab.service.queue", "admit")}
# SQL that adds, removes or moves a run in the queue (a web-only column of a row, such as the student who
# queued it, webapp.classdb.tag_run, is the web app's: it is set through store.enqueue's `tag`)
WRITES_RUNS = re.compile(r"\b(INSERT\s+(OR\s+\w+\s+)?INTO\s+runs\b|DELETE\s+FROM\s+runs\b|"
                         r"UPDATE\s+runs\s+SET\s+[^\"]*\b(status|started|finished|summary|environment)\s*=)",
                         re.IGNORECASE)
QUEUED_SQL = re.compile(r"status\s*=\s*'queued'", re.IGNORECASE)
# `.submit(...)` calls that are not Dask's: the service queue's own (a web request queues a run)
NOT_DASK_SUBMIT = {("webapp/services.py", "self.manager.submit")}


def sources(*folders: str) -> dict[str, str]:
    """Project path -> text of every Python file under `folders`."""
    return {str(p.relative_to(ROOT)): p.read_text() for folder in folders for p in (ROOT / folder).rglob("*.py")
            if "__pycache__" not in p.parts}


def imported(text: str) -> set[tuple[str, str]]:
    """(module, name) of every import in `text` (name "" for `import module`), also inside functions."""
    out: set[tuple[str, str]] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            out |= {(a.name, "") for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            out |= {(node.module, a.name) for a in node.names}
    return out


def dask_importers(files: dict[str, str]) -> set[str]:
    return {path for path, text in files.items() if any(m.split(".")[0] in DASK for m, _ in imported(text))}


def submit_calls(files: dict[str, str]) -> set[tuple[str, str]]:
    """(file, receiver.submit) of every method call named `submit`."""
    out = set()
    for path, text in files.items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "submit":
                out.add((path, ast.unparse(node.func)))
    return out


def queue_code(files: dict[str, str]) -> set[str]:
    """Files that import the engine's run, the cost model or the admission, or write the run store's rows
    or count its queue with SQL of their own: a queue or admission outside the service."""
    found = set()
    for path, text in files.items():
        imports = imported(text)
        if imports & (RUNS_A_RUN | ADMITS_NAMES) or {m for m, _ in imports} & ADMITS \
                or {f"{m}.{n}" for m, n in imports} & ADMITS:
            found.add(f"{path}: imports a run or the admission")
        if WRITES_RUNS.search(text) or QUEUED_SQL.search(text):
            found.add(f"{path}: SQL of the run queue")
    return found


def test_only_the_service_imports_dask() -> None:
    files = sources("fastlab", "webapp")
    assert dask_importers(files) == {f"{SERVICE}cluster.py", f"{SERVICE}worker.py"}
    assert dask_importers({"webapp/x.py": "def f():\n    from distributed import Client\n"}) == {"webapp/x.py"}


def test_one_dask_submission_path() -> None:
    """fastlab.service.cluster.submit is the one place a run is handed to Dask: the web queue's cluster runs
    and a sweep's points both call it (before: sweep.run.run_point_remote and experiment.cluster_run's
    run_web_remote, each submitted where it was used)."""
    files = sources("fastlab", "webapp", "bench")
    assert submit_calls(files) - NOT_DASK_SUBMIT == {(f"{SERVICE}cluster.py", "client.submit")}
    tree = ast.parse(files[f"{SERVICE}cluster.py"])
    owners = [f.name for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)
              for n in ast.walk(f) if isinstance(n, ast.Call) and ast.unparse(n.func) == "client.submit"]
    assert owners == ["submit"]
    users = {path for path, text in files.items() if "run_remote" in text}
    assert users == {f"{SERVICE}cluster.py", f"{SERVICE}worker.py"}  # the task, submitted only by submit
    assert ("fastlab.service.cluster", "submit") in imported(files["fastlab/sweep/run.py"])
    assert submit_calls({"fastlab/sweep/run.py": "client.submit(task, resources={'machine': 1})"}) == \
        {("fastlab/sweep/run.py", "client.submit")}


def test_the_web_app_has_no_queue_admission_or_dask_code() -> None:
    web = sources("webapp")
    assert not dask_importers(web)
    assert not queue_code(web), sorted(queue_code(web))
    assert not {p for p, _ in submit_calls(web)} - {p for p, _ in NOT_DASK_SUBMIT}
    assert not {"webapp/runner.py", "webapp/admission.py", "webapp/cluster.py"} & set(web)
    assert queue_code({"webapp/x.py": "from fastlab.experiment.cost import admit\n"}) == \
        {"webapp/x.py: imports a run or the admission"}
    assert queue_code({"webapp/x.py": "from fastlab.service.admission import predicted\n"}) == \
        {"webapp/x.py: imports a run or the admission"}
    assert queue_code({"webapp/x.py": "SQL = \"UPDATE runs SET status = 'cancelled' WHERE id = ?\"\n"}) == \
        {"webapp/x.py: SQL of the run queue"}


def test_every_front_end_runs_experiments_through_the_service() -> None:
    """`fastlab run`, the Python API, labs, sweeps and the queue run the engine through
    fastlab.service.run.execute; only the engine's own stage (replay, the self-test) and that one
    function call run_experiment."""
    files = sources("fastlab", "webapp")
    callers = {path for path, text in files.items() if imported(text) & RUNS_A_RUN}
    assert callers == {"fastlab/service/run.py", "fastlab/experiment/replay.py", "fastlab/experiment/selftest.py"}
    executes = {path for path, text in files.items() if ("fastlab.service.run", "execute") in imported(text)}
    assert {"fastlab/__init__.py", "fastlab/cli/run.py", "fastlab/labs/run.py", "fastlab/sweep/run.py",
            f"{SERVICE}queue.py", f"{SERVICE}worker.py"} <= executes
