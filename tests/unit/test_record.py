"""The typed run record (fastlab.base.record, issue 48 item 3): every run this repository holds -- the labs'
recordings and two bundles made with main's code before the record existed -- loads through it, its
migration says what it changed, a bad file is one line naming the field, every field documents its role
and unit, and the headline figures are one function's."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from fastlab.base import record
from fastlab.base.record import (
    SCHEMA_VERSION,
    Environment,
    RecordError,
    Summary,
    headline,
    read_environment,
    read_summary,
)

REPO = Path(__file__).resolve().parents[2]
# every run folder the repository holds: the labs' recordings and the example notebooks' sweeps (made with main's
# code before the record existed)
RECORDED = sorted(p.parent for pattern in ("labs/*/recorded/**/summary.json", "examples/notebooks/data/**/summary.json")
                  for p in REPO.glob(pattern))
BUNDLES = REPO / "tests" / "fixtures" / "bundles"


def test_the_repository_holds_the_recordings_this_test_reads() -> None:
    assert len(RECORDED) >= 130  # 110 recordings and 24 sweep points on 2026-11-28: a glob that finds nothing fails
    assert sorted(p.name for p in BUNDLES.glob("*.zip")) == ["run-v0.zip", "sweep-v0.zip"]


@pytest.mark.parametrize("folder", RECORDED, ids=lambda p: str(p.relative_to(REPO)))
def test_every_recording_loads_migrated_and_round_trips(folder: Path) -> None:
    """Each recording's files read as version 0 (written before the record) or as SCHEMA_VERSION (recorded since,
    e.g. lab 03's rows 7/9/10 of 2026-11-29), come out at SCHEMA_VERSION, and write back as the same data (plus
    the version and what the migration filled in): nothing a reader does loses a field."""
    for name, read, steps in (("summary.json", read_summary, record.SUMMARY_STEPS),
                              ("environment.json", read_environment, record.ENVIRONMENT_STEPS)):
        text = (folder / name).read_text()
        assert json.loads(text).get("schema_version", 0) in (0, SCHEMA_VERSION)
        loaded = read(text)
        assert loaded.schema_version == SCHEMA_VERSION
        assert json.loads(record.to_json(loaded)) == record.migrate(json.loads(text), steps, name)
    summary = read_summary((folder / "summary.json").read_text())
    assert summary.flows and summary.links and summary.fidelity is not None
    assert all(link.aqm_drops is not None and link.reverse is not None and link.reverse.aqm_marks is not None
               for link in summary.links)
    assert all(isinstance(p.lost, int) for p in summary.idle_rtt)


def _bundle_summaries(zip_path: Path, tmp_path: Path) -> dict[str, tuple[Summary, Environment]]:
    from fastlab.results import bundle

    root = bundle.extract(zip_path, tmp_path)
    runs = [p.parent for p in root.rglob("summary.json")]
    return {str(run.relative_to(root)): (read_summary((run / "summary.json").read_text()),
                                         read_environment((run / "environment.json").read_text())) for run in runs}


def test_a_run_bundle_made_before_the_record_loads_with_what_the_cli_printed(tmp_path: Path) -> None:
    (summary, environment), = _bundle_summaries(BUNDLES / "run-v0.zip", tmp_path).values()
    f1, f2 = summary.flows
    assert (f1.cc, round(f1.throughput_mbps or 0, 2), f2.cc, round(f2.throughput_mbps or 0, 2)) == \
        ("fast", 7.37, "cubic", 2.13)
    bottleneck = summary.link("bottleneck")
    assert bottleneck is not None and bottleneck.drops == 111 and round(bottleneck.utilization or 0, 3) == 0.965
    assert summary.faithful is True and summary.segments is not None and len(summary.segments) == 2
    assert summary.segments[1].changes == ["h1: α 10 → 20 at 1.5 s"]
    changes = [a for a in environment.congestion_control.applied if a.at_s is not None]
    assert [(a.host, a.args, a.at_s) for a in changes] == [("h1", {"alpha": 20}, 1.5)]
    assert environment.run.name == "old-record" and environment.shaping_of("bottleneck") is not None


def test_the_old_bundle_loads_through_the_results_api_with_its_spec_typed(tmp_path: Path) -> None:
    """fastlab.results.api.load, what a notebook calls: the bundle verified, extracted, its record migrated,
    its spec as run typed by the spec schema."""
    from fastlab.results import api

    run = api.load(BUNDLES / "run-v0.zip", extract_to=tmp_path)
    assert isinstance(run, api.Run) and run.summary.schema_version == SCHEMA_VERSION and run.faithful is True
    assert run.experiment.name == "old-record" and run.experiment.cc_changes[0].args == {"alpha": 20}
    assert [f.id for f in run.summary.flows] == sorted(set(run.flows["flow"]))
    sweep = api.load(BUNDLES / "sweep-v0.zip", extract_to=tmp_path / "sweep")
    assert isinstance(sweep, api.Sweep) and list(sweep.table()["point"]) == ["p00-r0", "p01-r0"]


def test_a_sweep_bundle_made_before_the_record_loads_every_point(tmp_path: Path) -> None:
    points = _bundle_summaries(BUNDLES / "sweep-v0.zip", tmp_path)
    assert sorted(points) == ["points/p00-r0", "points/p01-r0"]
    for summary, environment in points.values():
        assert summary.schema_version == SCHEMA_VERSION and summary.flows[0].cc == "fast"
        assert environment.flows["f1"].cc_args["alpha"] in (5, 15)


def test_the_migration_fills_what_version_0_left_out_and_says_nothing_of_a_verdict_without_faithful() -> None:
    old = {"flows": [{"id": "f1"}], "links": [{"id": "l", "queue_drops": 1, "reverse": {"queue_drops": 0}}],
           "idle_rtt": [{"src": "h1", "dst": "h2", "pings": 3}], "fidelity": {"paths": []}}
    summary = read_summary(json.dumps(old))
    link = summary.links[0]
    assert (link.aqm_drops, link.aqm_marks, link.reverse and link.reverse.aqm_drops) == (0, 0, 0)
    assert summary.idle_rtt[0].lost == 0 and summary.fidelity is None and summary.faithful is None
    assert summary.what_happened is None and summary.segments is None  # not written: not made up
    current = read_summary({"schema_version": 1, "flows": [], "links": [{"id": "l"}]})
    assert current.links[0].aqm_drops is None  # a version-1 file is not migrated


def test_fields_a_model_does_not_name_are_kept_and_written_back() -> None:
    """Another branch's new field (a flow's delay accounting) survives a reader that does not know it."""
    summary = read_summary({"flows": [{"id": "f1", "delay": {"queue_ms": 3.5}}], "links": [], "extra_top": [1]})
    assert summary.flows[0].model_extra == {"delay": {"queue_ms": 3.5}}
    again = json.loads(record.to_json(summary))
    assert again["flows"][0]["delay"] == {"queue_ms": 3.5} and again["extra_top"] == [1]


@pytest.mark.parametrize(("text", "says"), [
    ('{"schema_version": 2}', "summary: schema_version 2 was written by a newer fastlab"),
    ('{"schema_version": "x"}', "summary: schema_version: 'x' is not a version number"),
    ('[1, 2]', "summary: not a mapping of fields"),
    ('{"flows": [{"id": "f1", "retransmits": 2.5}]}',
     "summary: flows[0].retransmits: Input should be a valid integer"),
    ('{"flows": [{"src": "h1"}]}', "summary: flows[0].id: Field required"),
    ('{"fidelity": {"faithful": "maybe"}}', "summary: fidelity.faithful: Input should be a valid boolean"),
    ('{"flows": ' + "[" * 100 + "]" * 100 + "}", "summary: nested deeper than 32 levels"),
    ('{"a": 1, "a": 2}', "summary: the key 'a' is given twice"),
    ("not json", "summary: not valid JSON at line 1"),
])
def test_a_bad_summary_is_one_line_naming_the_field(text: str, says: str) -> None:
    with pytest.raises(RecordError) as err:
        read_summary(text)
    assert str(err.value).startswith(says) and "\n" not in str(err.value)


def test_a_nan_figure_written_before_the_record_reads_as_none_and_is_written_as_null() -> None:
    summary = read_summary('{"flows": [{"id": "f1", "mean_rtt_ms": NaN, "throughput_mbps": 1.5}]}')
    assert summary.flows[0].mean_rtt_ms is None
    summary.flows[0].mean_rtt_ms = math.nan  # a figure of no samples, as the measure stage may compute it
    assert json.loads(record.to_json(summary))["flows"][0]["mean_rtt_ms"] is None


def test_an_over_long_record_is_refused_before_it_is_parsed() -> None:
    with pytest.raises(RecordError, match="longer than"):
        read_environment(" " * (record.MAX_RECORD_CHARS + 1))


MODELS = [m for m in vars(record).values()
          if isinstance(m, type) and issubclass(m, record.Part) and m is not record.Part]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_every_field_of_the_record_says_its_role_and_unit(model: type[record.Part]) -> None:
    assert model.__doc__ and model.__doc__ != record.Part.__doc__
    for name, info in model.model_fields.items():
        assert info.description and len(info.description) > 5, f"{model.__name__}.{name}: no role"
        assert record.unit_of(model, name) is not None, f"{model.__name__}.{name}: no unit ('' for none)"


def test_units_follow_the_field_names() -> None:
    units = record.units()
    assert units["throughput_mbps"] == "Mb/s" and units["utilization"] == "fraction"
    assert units["mean_backlog_pkts"] == "packets" and units["min_rtt_ms"] == "ms"
    for name, unit in units.items():  # a name ending in a unit carries that unit
        for suffix, want in (("_ms", "ms"), ("_mbps", "Mb/s"), ("_pkts", "packets"), ("_s", "s")):
            if name.endswith(suffix):
                assert unit == want, name


def test_headline_figures_of_a_recording_with_units_and_keys() -> None:
    folder = REPO / "labs" / "05-hstcp" / "recorded" / "full" / "cern"
    summary = read_summary((folder / "summary.json").read_text())
    lines = headline(summary)
    flat = lines.flat()
    assert flat["throughput_mbps"] == round(sum(f.throughput_mbps or 0 for f in summary.flows), 4)
    assert flat["faithful"] == (1 if summary.faithful else 0)
    assert lines.run("throughput_mbps").unit == "Mb/s" and lines.run("retransmits").unit == "packets"
    first = summary.flows[0]
    assert flat[f"{first.id}_throughput_mbps"] == first.throughput_mbps and flat[f"{first.id}_cc"] == first.cc
    busiest = max(summary.links, key=lambda link: link.utilization or 0)
    assert lines.busiest_link() == busiest.id
    util = next(f for f in lines.of("link", busiest.id) if f.name == "utilization")
    assert util.unit == "fraction" and util.shown().unit == "%"
    assert util.shown().value == round(100 * (busiest.utilization or 0), 1)
    assert lines.subjects("flow") == [f.id for f in summary.flows]


def test_headline_of_an_empty_or_hostile_summary_has_no_figures_that_are_not_numbers() -> None:
    empty = headline(Summary()).flat()
    assert empty == {"throughput_mbps": 0, "mean_rtt_ms": None, "retransmits": 0, "jain_index": None,
                     "faithful": None}
    odd = read_summary({"flows": [{"id": "f1", "throughput_mbps": 1e308, "mean_rtt_ms": None}],
                        "links": [{"id": "l", "utilization": None}], "jain_index": 0.5})
    assert headline(odd).flat()["l_utilization"] is None and headline(odd).busiest_link() is None


# --- the rules the record holds the project to (as test_import_graph.py holds the stage order) ----------

RECORD = REPO / "fastlab" / "base" / "record"
PROJECT = ("fastlab", "webapp", "labs", "bench", "topologies", "controllers", "examples", "scripts", "tests")


def _project_files(*suffixes: str) -> list[Path]:
    return sorted(p for folder in PROJECT for suffix in suffixes for p in (REPO / folder).rglob(f"*{suffix}")
                  if "__pycache__" not in p.parts and not p.is_relative_to(RECORD))


def test_no_one_reads_a_summary_by_its_keys_outside_the_record() -> None:
    """Issue 48: `summary` was read by string keys 82 times in 29 files; a field is now read as the record's
    field, so a renamed or re-meant one is one model's change and its migration. No summary indexed by a key
    nor its get() anywhere in the project's code, tests, pages and notebooks, the labs' checkpoints too."""
    words = ("summary" + "[", "summary" + ".get(")  # spelled apart: this file is scanned too
    found = [f"{p.relative_to(REPO)}:{n}" for p in _project_files(".py", ".html", ".js", ".ipynb")
             for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1) if any(w in line for w in words)]
    assert not found, found
    assert len(_project_files(".py")) > 200  # the scan sees the project (237 files on 2026-11-28)


def test_the_files_of_the_record_are_named_and_opened_by_the_run_folder_alone() -> None:
    """One reader of run folders: summary.json and environment.json are named (rundir.SUMMARY/ENVIRONMENT)
    and opened by fastlab.base.rundir only; every other module asks RunFolder or RunReader (labs' StepRun and
    results' Run are RunReader) for the typed record. tests/unit/test_rundir.py holds the string literals."""
    import ast

    from fastlab.base.rundir import RunReader
    from fastlab.labs.kit import StepRun
    from fastlab.results.api import Run

    assert issubclass(StepRun, RunReader) and issubclass(Run, RunReader)
    named = []
    for path in _project_files(".py"):
        if path.is_relative_to(REPO / "tests") or path == REPO / "fastlab" / "base" / "rundir.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.ImportFrom) and node.module and \
                node.module.endswith("rundir") else [node.attr] if isinstance(node, ast.Attribute) and \
                isinstance(node.value, ast.Name) and node.value.id == "rundir" else []
            named += [f"{path.relative_to(REPO)}: {n}" for n in names if n in ("SUMMARY", "ENVIRONMENT")]
    assert not named, named


def _calls_headline(path: Path, function: str) -> bool:
    import ast

    tree = ast.parse(path.read_text())
    fn = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == function)
    return any(isinstance(c, ast.Call) and (getattr(c.func, "id", None) == "headline"
                                            or getattr(c.func, "attr", None) == "headline") for c in ast.walk(fn))


@pytest.mark.parametrize(("module", "function"), [
    ("fastlab/results/api.py", "headline"), ("fastlab/sweep/report.py", "summary_metrics"),
    ("webapp/sweeps.py", "results"), ("webapp/compare.py", "metrics")])
def test_the_four_flattenings_of_a_summary_are_the_one_headline(module: str, function: str) -> None:
    """Issue 48: the same summary was flattened four times with different names and units; each place now
    takes fastlab.base.record.headline's figures (and shows a fraction as % through Figure.shown)."""
    assert _calls_headline(REPO / module, function), f"{module}:{function} does not take the record's headline"


def test_the_four_places_agree_on_a_recording() -> None:
    """The same run, read by the four: the same total goodput, the same busiest link's utilization (a
    fraction, or its percentage where people read it), the same verdict."""
    from fastlab.results import api
    from fastlab.sweep.report import summary_metrics
    from webapp import compare, sweeps

    folder = REPO / "labs" / "02-fast-equilibrium" / "recorded" / "short" / "alphas"
    run = api.Run(folder)
    summary = run.summary
    total = round(sum(f.throughput_mbps or 0 for f in summary.flows), 4)
    bottleneck = max(summary.links, key=lambda link: link.utilization or 0)
    assert summary.links[0].id != bottleneck.id  # the first link is not the bottleneck here (an access link)
    row, metrics = api.headline(run), summary_metrics(summary)
    assert row["throughput_mbps"] == metrics["throughput_mbps"] == total
    assert row[f"{bottleneck.id}_utilization"] == metrics[f"{bottleneck.id}_utilization"] == bottleneck.utilization
    web = sweeps.results(summary)
    assert web["throughput"] == total and web["utilization"] == round(100 * (bottleneck.utilization or 0), 1)
    side = {r["quantity"]: r for r in compare.metrics([summary])}
    assert side["total goodput"]["values"] == [total] and side["total goodput"]["unit"] == "Mb/s"
    assert side[f"{bottleneck.id} utilization"] == {"quantity": f"{bottleneck.id} utilization", "unit": "%",
                                                     "values": [round(100 * (bottleneck.utilization or 0), 1)]}
    assert row["faithful"] == metrics["faithful"] == 1 and side["emulation"]["values"] == ["faithful"]
