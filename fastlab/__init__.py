"""fastlab: a Mininet-based emulation and teaching lab for TCP congestion control.

What a script needs is here, at the package's top (each name is imported when first used, so importing
fastlab stays cheap: its flow tools start as `python -S -m fastlab.run.flowtool`):

    import fastlab

    spec = fastlab.load_spec("examples/simple-cubic.yaml")  # or fastlab.Spec(name=..., ...)
    result = fastlab.run(spec)                # as root: a real run, a few seconds
    run = fastlab.load(result.directory)      # its traces, summary and verdict

- `run(spec)`: run an experiment (a Spec, a mapping of its fields, or a YAML file's path);
- `load(path)`: a finished run, a sweep or a bundle, read for analysis (no root needed);
- `Spec` (`ExperimentSpec`), `load_spec`, `SpecError`: experiments as data;
- `PlanBuilder`, `TopologyPlan`, `TopologyFile`, `LinkSpec`, `Buffer`, `Strict`, `TopologyError`: what a
  topology plugin (NAME, DESCRIPTION, Args, plan(args)) is written with, and how a spec names its file;
- `topologies()`: the topologies a spec may name here; `RunResult`, `RunError`: what `run` returns or raises.

The stages (base -> define -> plan -> net -> run -> measure -> theory -> results -> experiment -> service ->
labs -> sweep -> cli) are subpackages; `fastlab.run` is both the run stage's package and the `run` function (a
callable module: the stage's name came first).
"""

from __future__ import annotations

import types

__version__ = "0.1.0"

# Importing mininet.log makes Mininet's logger class every new logger's (logging.setLoggerClass): a
# fastlab module first imported after Mininet (the web worker imports the engine lazily, after the
# capability probe has imported Mininet) got a MininetLogger at level 25 with its own stderr handler,
# which dropped the engine's INFO progress lines from the live page and printed warnings twice (found
# when the unit tier ran on two cores). Mininet is imported here once, then the class is put back;
# Mininet's own logger keeps its class. Where Mininet cannot be imported (the check tier's virtualenv; a
# flow tool started as `python -S`, fastlab.run.traffic) there is nothing to undo, and logging is not
# imported: a flow tool's start is most of a second of CPU in an emulated guest.
try:
    import mininet.log  # noqa: F401
except ImportError:
    pass
else:
    import logging

    logging.setLoggerClass(logging.Logger)

TYPE_CHECKING = False  # typing is not imported here: a flow tool's start (python -S) does without it
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from fastlab.define.schema import ExperimentSpec
    from fastlab.experiment.engine import RunResult

# name -> (module, attribute): the public names, imported on first use (PEP 562).
_EXPORTS = {
    "Spec": ("fastlab.define.schema", "ExperimentSpec"),
    "ExperimentSpec": ("fastlab.define.schema", "ExperimentSpec"),
    "load_spec": ("fastlab.define.schema", "load_spec"),
    "SpecError": ("fastlab.define.schema", "SpecError"),
    "TopologyFile": ("fastlab.define.schema", "TopologyFile"),
    "LinkSpec": ("fastlab.define.schema", "LinkSpec"),
    "Buffer": ("fastlab.define.schema", "Buffer"),
    "Strict": ("fastlab.define.schema", "Strict"),
    "PlanBuilder": ("fastlab.define.topology", "PlanBuilder"),
    "TopologyPlan": ("fastlab.define.topology", "TopologyPlan"),
    "TopologyError": ("fastlab.define.topology", "TopologyError"),
    "topologies": ("fastlab.define.topology", "catalogue"),
    "RunResult": ("fastlab.experiment.engine", "RunResult"),
    "RunError": ("fastlab.experiment.engine", "RunError"),
}
__all__ = ["__version__", "run", "load", *_EXPORTS]


def __getattr__(name: str) -> Any:
    """The public names of `_EXPORTS`, imported when first asked for; `run` is the run stage's package,
    made callable (`_RunStage`)."""
    if name == "run":
        import importlib

        return importlib.import_module("fastlab.run")
    if name not in _EXPORTS:
        raise AttributeError(f"module 'fastlab' has no attribute {name!r}")
    import importlib

    module, attribute = _EXPORTS[name]
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def _run(spec: ExperimentSpec | dict[str, Any] | str | Path, *, out: str | Path | None = None,
         **options: Any) -> RunResult:
    """Run an experiment on this machine and return its RunResult (the results folder, summary and
    environment). `spec` is a Spec, a mapping of its fields, or the path of a YAML spec file; `out` is
    the results folder (default: a new one under the results root, fastlab.base.paths.results_root).
    `options` go to the engine through fastlab.service.run.execute (on_sample, cancel, live, caps, registry).
    Needs root and Mininet (namespaces, tc, BPF); what the run created is removed however it ends.
    Raises SpecError (one line naming the field) before anything is built, RunError if it fails after."""
    from pathlib import Path

    from fastlab.define.schema import ExperimentSpec, load_spec, parse_spec
    from fastlab.service.run import execute

    if isinstance(spec, str | Path):
        spec = load_spec(str(spec))
    elif not isinstance(spec, ExperimentSpec):
        spec = parse_spec(spec)
    return execute(spec, Path(out) if out is not None else None, **options)


def load(path: str | Path, extract_to: str | Path | None = None) -> Any:
    """Read a finished run for analysis: `path` is a run folder, a sweep folder or a bundle (.zip, verified
    against its manifest, then extracted into `extract_to` or a new temporary folder). Returns the run
    (its traces as DataFrames, summary, environment, spec, fidelity verdict) or the sweep (its points as
    runs); raises ResultsError, one line, for a path that is none of them. Needs no root. (It is
    fastlab.results.api.load, imported when first called.)"""
    from fastlab.results import api

    return api.load(path, extract_to)


class _RunStage(types.ModuleType):
    """fastlab/run/, the run stage's package, also callable as `fastlab.run(spec)` (its class is set to
    this one when it is imported)."""

    def __call__(self, spec: ExperimentSpec | dict[str, Any] | str | Path, *, out: str | Path | None = None,
                 **options: Any) -> RunResult:
        return _run(spec, out=out, **options)

    __call__.__doc__ = _run.__doc__


# help(fastlab) shows `run` from here: as an attribute it is the run stage's package.
__doc__ = f"{__doc__}\n## fastlab.run(spec, *, out=None, **options)\n\n" + "\n".join(
    line.removeprefix("    ") for line in (_run.__doc__ or "").splitlines())
