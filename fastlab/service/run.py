"""One experiment carried out here, in the calling thread: the service's serial path.

`fastlab run`, the Python API's `fastlab.run`, a lab's steps, a sweep's points run locally, the queue's
in-process runs and a Dask worker's task all run their experiment through `execute`, so what "running an
experiment" means (the engine, its cancel flag, its live control, the admission it records) is said once.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fastlab.define.schema import ExperimentSpec
    from fastlab.experiment.engine import RunResult


def execute(spec: ExperimentSpec, out: Path | None = None, **options: Any) -> RunResult:
    """Run `spec` through the engine into `out` (default: a new folder under the results root) and return
    its RunResult. `options` are the engine's (on_sample, cancel, live, caps, registry, admission: the
    decision recorded in environment.json; scripts: the results or sweep folder that keeps report.html's
    plotly.js). Raises SpecError before anything is built, RunError after."""
    from fastlab.experiment.engine import run_experiment

    return run_experiment(spec, out=out, **options)
