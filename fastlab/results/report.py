"""report.html: one page per run, offline: its data, styles and chart code inlined, plotly.js a file kept once
per results folder (`share_plotly`).

Near the top, the run's fidelity verdict (`fastlab.results.fidelity_view`): a warning box with the
reasons and what to do when the emulation was not faithful, a short note otherwise, "not
assessed" for runs made before verdicts; then the measurements behind it.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import threading
from pathlib import Path
from typing import Any

import jinja2
import pandas as pd
import plotly
import yaml
from markupsafe import Markup

from fastlab.base.record import Environment, Summary
from fastlab.define.schema import SpecError, parse_spec
from fastlab.results import chart_lines, fidelity_view
from fastlab.results.chart_data import chart_samples, round_trip, script_json
from fastlab.results.tables import asset, human_time, jain_text, run_tables
from fastlab.theory import segments

log = logging.getLogger(__name__)
PLOTLY_SOURCE = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"  # 4.6 MB
# report.html's plotly.js is a file of its own, kept once per results folder (issue 51: a 30-point sweep's
# reports carried the same 4.6 MB thirty times). Named by version, so reports drawn with another plotly keep
# theirs. A report looks for it, in order: beside itself (a run folder made on its own with --out, a run's
# bundle), in the results folder that holds the run, in a sweep's folder (points/<id>/report.html). Offline.
PLOTLY_FILE = f"plotly-{plotly.__version__}.min.js"
PLOTLY_PLACES = (PLOTLY_FILE, f"../{PLOTLY_FILE}", f"../../{PLOTLY_FILE}")


def share_plotly(folder: Path) -> Path:
    """plotly.js kept in `folder` for the reports under it (written beside and renamed into place when
    missing or not the installed one, so a report never sees half of it); returns its path. OSError as the
    file system says."""
    target = folder / PLOTLY_FILE
    if not target.is_file() or target.stat().st_size != PLOTLY_SOURCE.stat().st_size:
        scratch = folder / f".{PLOTLY_FILE}.{os.getpid()}.{threading.get_ident()}"
        shutil.copyfile(PLOTLY_SOURCE, scratch)
        scratch.replace(target)
    return target


def keep_plotly(run_dir: Path, scripts: Path | None) -> Path:
    """A new run's report.html's plotly.js where the report finds it: kept once in `scripts` (the run folder's
    parent or grandparent: a results or sweep folder), else (none given, or one that cannot take it) in the
    run's own folder, which then opens on its own. Returns the copy's path; OSError if no place takes it."""
    above = run_dir.resolve().parents
    if scripts is not None and scripts.resolve() in (above[0], above[1]):  # where the report looks
        try:
            return share_plotly(scripts)
        except OSError as exc:
            log.warning("%s: plotly.js not kept in %s (%s): kept in the run's folder", run_dir.name, scripts, exc)
    return share_plotly(run_dir)


def fidelity_section(summary: Summary) -> str:
    """The verdict's banner and, for an assessed run, its measurements under a heading."""
    verdict = fidelity_view.verdict_of(summary)
    details = fidelity_view.details_html(verdict)
    return fidelity_view.banner_html(verdict) + (f"\n<h2>Emulation fidelity</h2>{details}" if details else "")


TEMPLATES = jinja2.Environment(loader=jinja2.PackageLoader("fastlab", "templates"),
                               autoescape=True, undefined=jinja2.StrictUndefined)
TEMPLATES.filters["when"] = human_time
TEMPLATES.globals["theory_kinds"] = chart_lines.kinds
TEMPLATES.globals["has_drop_probability"] = chart_lines.has_drop_probability


def render(spec_yaml: str, summary: Summary, environment: Environment,
           flows: pd.DataFrame, links: pd.DataFrame, events: pd.DataFrame,
           refs: list[dict[str, Any]] | None = None, duration_s: float | None = None) -> str:
    """report.html (templates/report.html): fidelity, what happened, the tables (a run whose parameters
    changed: its parts), the live page's charts (templates/charts.html and charts.js: the same titles,
    smoothing, time origin, theory lines and a marker at each change), how it ran."""
    plain = yaml.safe_load(spec_yaml) if spec_yaml else None
    spec = plain if isinstance(plain, dict) else None
    changes = segments.applied_changes(environment)
    try:
        parsed = parse_spec(spec)
    except SpecError:
        parsed = None
    marks = segments.chart_marks(parsed, changes)
    sample_hz = (spec or {}).get("sample_hz") or 20
    data = {"refs": refs or [], "lines": chart_lines.lines(refs or []), "marks": marks, "sampleHz": sample_hz,
            "duration": duration_s or (spec or {}).get("duration_s") or 0,
            "samples": chart_samples(flows, links, events), "roundTrip": round_trip(flows, summary)}
    return TEMPLATES.get_template("report.html").render(
        run=environment.run, kernel=environment.kernel, jain_index=jain_text(summary),
        base_css=asset("base.css"), fidelity_css=fidelity_view.CSS, fidelity=fidelity_section(summary),
        what_happened=summary.what_happened or [],
        **run_tables(summary, environment), spec=spec, refs=refs or [], marks=marks, measured=True,
        round_trip=data["roundTrip"],
        plotly_places=PLOTLY_PLACES, charts_js=Markup(asset("charts.js")), data=script_json(data),  # noqa: S704
        spec_yaml=spec_yaml, tools=json.dumps(environment.tools, indent=1))
