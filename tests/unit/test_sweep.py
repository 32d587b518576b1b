"""Sweeps as data: definition, expansion into points, validation of every point, aggregation, resuming."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from fastlab.base.record import read_summary
from fastlab.define.cc import Registry
from fastlab.define.schema import SpecError, parse_override
from fastlab.plan.prepare import validate
from fastlab.results.bundle import export, verify
from fastlab.service import cluster as service_cluster
from fastlab.sweep import points as sweep
from fastlab.sweep import report as sweep_report
from fastlab.sweep import run as sweep_run

REPO = Path(__file__).resolve().parents[2]
KERNEL = Registry(kernel_listing=lambda: {"reno", "cubic", "bbr"}, module_listing=set)
BASE = {"name": "sw", "topology": "dumbbell", "topology_args": {"rate_mbps": 20, "rtt_ms": 20}, "duration_s": 4,
        "seed": 10, "flows": [{"src": "h1", "dst": "h2", "cc": "cubic"}],
        "links": {"bottleneck": {"loss": {"model": "bernoulli", "rate": 0.0}}}}


def doc(**sweep_section: object) -> dict[str, object]:
    return {**BASE, "sweep": sweep_section}


def test_grid_expands_every_combination_times_repetitions_with_seed_per_repetition() -> None:
    plan = sweep.plan_sweep(doc(params={"topology_args.rate_mbps": [10, 20, 40],
                                        "links.bottleneck.loss.rate": [0, 1e-4]}, repeat=2))
    assert len(plan.points) == 3 * 2 * 2
    assert [p.id for p in plan.points[:4]] == ["p00-r0", "p00-r1", "p01-r0", "p01-r1"]
    assert {(p.rep, p.seed) for p in plan.points} == {(0, 10), (1, 11)}
    combos = {p.combo: (p.params["topology_args.rate_mbps"], p.params["links.bottleneck.loss.rate"])
              for p in plan.points}
    assert sorted(combos.values()) == sorted((r, loss) for r in (10, 20, 40) for loss in (0, 1e-4))
    assert plan.points[3].overrides() == ["topology_args.rate_mbps=10", "links.bottleneck.loss.rate=0.0001",
                                          "seed=11"]


def test_zip_pairs_values_and_ranges_resolve() -> None:
    plan = sweep.plan_sweep(doc(params={"flows.0.count": {"from": 1, "to": 4, "step": 1},
                                        "topology_args.rtt_ms": {"from": 10, "to": 80, "num": 4, "scale": "log"}},
                                mode="zip"))
    assert [p.params["flows.0.count"] for p in plan.points] == [1, 2, 3, 4]
    assert [p.params["topology_args.rtt_ms"] for p in plan.points] == pytest.approx([10, 20, 40, 80])
    assert sweep.ValueRange.model_validate({"from": 0, "to": 1e-3, "num": 3}).values() == [0, 0.0005, 0.001]
    assert sweep.ValueRange.model_validate({"from": 1, "to": 35, "step": 5}).values() == [1, 6, 11, 16, 21, 26, 31]


def test_sweeping_the_seed_runs_each_value_plus_the_repetition() -> None:
    plan = sweep.plan_sweep(doc(params={"seed": [5, 9]}, repeat=2))
    assert [(p.id, p.seed) for p in plan.points] == [("p00-r0", 5), ("p00-r1", 6), ("p01-r0", 9), ("p01-r1", 10)]
    assert plan.point_document(plan.points[1])["seed"] == 6


def test_point_specs_get_their_values_and_seed() -> None:
    plan = sweep.plan_sweep(doc(params={"links.bottleneck.loss": [{"model": "every_nth", "n": 100},
                                                                  {"model": "bernoulli", "rate": 1e-5}],
                                        "flows.0.cc": ["cubic", "yes"]}, repeat=2))
    specs = sweep.check_points(plan, lambda s: validate(s, KERNEL) if s.flows[0].cc != "yes" else None)
    last = specs[plan.points[-1].id]
    assert last.links["bottleneck"].loss.rate == 1e-5 and last.flows[0].cc == "yes" and last.seed == 11
    assert specs["p00-r0"].links["bottleneck"].loss.n == 100 and specs["p00-r0"].seed == 10


@pytest.mark.parametrize("value", [1e-5, 0.0001, 35, "yes", "on", None, True, {"model": "bernoulli", "rate": 1e-5},
                                   [1.5, "2"], "a: b"])
def test_values_round_trip_through_set(value: object) -> None:
    assert parse_override(f"x={sweep.yaml_value(value)}")[1] == value


@pytest.mark.parametrize("section, field", [
    ({"params": {}}, "sweep.params"),
    ({"params": {"flows.0.cc_args.alpha": []}}, "sweep.params.flows.0.cc_args.alpha"),
    ({"params": {"flows.0.cc_args.alpha": 5}}, "sweep.params.flows.0.cc_args.alpha"),
    ({"params": {"flows.0.cc_args.alpha": [1, 1]}}, "listed twice"),
    ({"params": {"seed": [1, "x"]}}, "sweep.params.seed: seeds are whole numbers"),
    ({"params": {"seed": [1, -2]}}, "sweep.params.seed"),
    ({"params": {"name": ["a", "b"]}}, "sweep.params.name"),
    ({"params": {"flows..cc": [1]}}, "sweep.params.flows..cc"),
    ({"params": {"topology_args.rtt_ms": {"from": 10, "to": 5, "step": 1}}}, "sweep.params.topology_args.rtt_ms"),
    ({"params": {"topology_args.rtt_ms": {"from": 1, "to": 5}}}, "either step or num"),
    ({"params": {"topology_args.rtt_ms": {"from": 1, "to": 5, "stepp": 1}}}, "stepp"),
    ({"params": {"a": [1, 2], "b": [1]}, "mode": "zip"}, "sweep.mode"),
    ({"params": {"a": [1]}, "mode": "random"}, "sweep.mode"),
    ({"params": {"a": [1]}, "repeat": 0}, "sweep.repeat"),
    ({"params": {"a": list(range(200)), "b": list(range(100))}}, "sweep.repeat"),
    ({"params": {"a": [1]}, "repaet": 2}, "sweep.repaet"),
])
def test_bad_definitions_name_the_field(section: dict[str, object], field: str) -> None:
    with pytest.raises(SpecError) as err:
        sweep.plan_sweep(doc(**section))
    assert field in str(err.value) and "\n" not in str(err.value)


def test_every_point_is_checked_before_any_runs_and_the_error_names_the_point() -> None:
    plan = sweep.plan_sweep(doc(params={"links.bottleneck.loss.rate": [0.5, 1.5]}))
    with pytest.raises(SpecError, match=r"sweep point p01-r0 \(links.bottleneck.loss.rate=1.5 seed=10\): "
                                        r"links.bottleneck.loss.rate"):
        sweep.check_points(plan)
    plan = sweep.plan_sweep(doc(params={"flows.0.cc": ["cubic", "nosuch"]}))
    with pytest.raises(SpecError, match=r"p01-r0 .*flows\[0\].cc"):
        sweep.check_points(plan, lambda s: validate(s, KERNEL))
    with pytest.raises(SpecError, match="sweep: missing"):
        sweep.plan_sweep(BASE)


def test_overrides_apply_to_the_file_and_change_its_identity() -> None:
    plain = sweep.plan_sweep(doc(params={"topology_args.rtt_ms": [10, 20]}, repeat=3))
    short = sweep.plan_sweep(doc(params={"topology_args.rtt_ms": [10, 20]}, repeat=3),
                             ["sweep.repeat=1", "duration_s=2"])
    assert len(short.points) == 2 and short.base["duration_s"] == 2
    assert plain.digest != short.digest
    assert plain.digest == sweep.plan_sweep(doc(params={"topology_args.rtt_ms": [10, 20]}, repeat=3)).digest


def test_example_sweep_file_is_valid() -> None:
    plan = sweep.load_sweep(REPO / "examples" / "sweep-alpha.yaml")
    specs = sweep.check_points(plan)
    assert len(specs) == 5 * 2 * 3
    assert {s.flows[0].cc_args["alpha"] for s in specs.values()} == {1, 5, 10, 20, 35}


def summary(throughput: float, rtt: float, utilization: float, retransmits: int) -> dict[str, object]:
    flow = {"src": "h1", "dst": "h2", "cc": "cubic", "min_rtt_ms": 20.0}
    return {"flows": [{"id": "f1", "throughput_mbps": throughput, "mean_rtt_ms": rtt, "retransmits": retransmits,
                       **flow},
                      {"id": "f2", "throughput_mbps": throughput / 2, "mean_rtt_ms": rtt + 2, "retransmits": 0,
                       **flow}],
            "links": [{"id": "bottleneck", "utilization": utilization, "mean_backlog_pkts": 5.0,
                       "max_backlog_pkts": 9, "queue_drops": 1, "loss_drops": 2, "drops": 3}],
            "jain_index": 0.9}


def test_summary_metrics_total_and_per_flow_and_link() -> None:
    m = sweep_report.summary_metrics(read_summary(summary(10.0, 30.0, 0.9, 4)))
    assert m["throughput_mbps"] == 15.0 and m["mean_rtt_ms"] == 31.0 and m["retransmits"] == 4
    assert m["bottleneck_utilization"] == 0.9 and m["f2_throughput_mbps"] == 5.0 and m["jain_index"] == 0.9


def test_aggregate_gives_mean_std_min_max_and_n_per_combination() -> None:
    plan = sweep.plan_sweep(doc(params={"topology_args.rtt_ms": [10, 20]}, repeat=3))
    throughputs = {"p00-r0": 10, "p00-r1": 12, "p00-r2": 14, "p01-r0": 20, "p01-r1": 22}  # p01-r2 not finished
    rows = pd.DataFrame([sweep.point_row(p, read_summary(summary(throughputs[p.id], 30, 0.9, 1)))
                         for p in plan.points if p.id in throughputs])
    means = sweep_report.aggregate(rows, ["topology_args.rtt_ms"])
    assert list(means["topology_args.rtt_ms"]) == [10, 20] and list(means["n"]) == [3, 2]
    assert list(means["f1_throughput_mbps_mean"]) == [12, 21]
    assert means["f1_throughput_mbps_std"].tolist() == pytest.approx([2.0, 2 ** 0.5])
    assert list(means["f1_throughput_mbps_min"]) == [10, 20] and list(means["f1_throughput_mbps_max"]) == [14, 22]
    assert list(means["bottleneck_utilization_mean"]) == [0.9, 0.9]
    page = sweep_report.render("sw", means, ["topology_args.rtt_ms"], 5, 6)
    assert "5 of 6 points finished" in page and "plotly" in page


def fake_point_dir(directory: Path, point: sweep.Point, finished: bool) -> Path:
    """Stands in for an engine run (this unit test cannot build namespaces)."""
    run = directory / "points" / point.id
    run.mkdir(parents=True)
    (run / "spec.yaml").write_text(yaml.safe_dump(BASE))
    if finished:
        (run / "summary.json").write_text(json.dumps(summary(10.0 + point.combo, 30, 0.9, 1)))
        (run / sweep.POINT_FILE).write_text(json.dumps({"id": point.id}))
    return run


def test_resume_keeps_finished_points_and_removes_partial_ones(tmp_path: Path, caplog) -> None:
    caplog.set_level(logging.INFO, logger="fastlab.sweep.points")
    plan = sweep.plan_sweep(doc(params={"topology_args.rtt_ms": [10, 20]}, repeat=2))
    state = sweep.prepare_directory(plan, tmp_path)
    assert [p.status for p in state.points] == ["pending"] * 4 and (tmp_path / sweep.SWEEP_FILE).is_file()
    kept = fake_point_dir(tmp_path, plan.points[0], finished=True)
    stamp = (kept / "summary.json").stat().st_mtime_ns
    partial = fake_point_dir(tmp_path, plan.points[1], finished=False)
    state = sweep.prepare_directory(plan, tmp_path)
    assert [p.status for p in state.points] == ["done", "pending", "pending", "pending"]
    assert not partial.exists() and (kept / "summary.json").stat().st_mtime_ns == stamp
    assert any("1 of 4 points already finished" in r.getMessage() for r in caplog.records)
    assert sweep.finished_points(tmp_path) == ["p00-r0"]
    table = sweep.write_aggregates(plan, tmp_path)
    assert list(table["point"]) == ["p00-r0"] and (tmp_path / "aggregate_mean.csv").is_file()
    assert "p00-r0" in "\n".join(sweep.status_lines(tmp_path))
    other = sweep.plan_sweep(doc(params={"topology_args.rtt_ms": [10, 30]}, repeat=2))
    with pytest.raises(sweep.SweepError, match="holds another sweep"):
        sweep.prepare_directory(other, tmp_path)


def test_a_sweep_bundle_holds_only_finished_points(tmp_path: Path) -> None:
    plan = sweep.plan_sweep(doc(params={"topology_args.rtt_ms": [10, 20]}))
    directory = tmp_path / "sw-sweep"
    sweep.prepare_directory(plan, directory)
    fake_point_dir(directory, plan.points[0], finished=True)
    fake_point_dir(directory, plan.points[1], finished=False)
    sweep.write_aggregates(plan, directory)
    zip_path = export(directory, tmp_path / "sweep.zip")
    import zipfile
    with zipfile.ZipFile(zip_path) as zf:
        names = set(zf.namelist())
        readme = zf.read("sw-sweep/REPRODUCE.md").decode()
    assert "sw-sweep/points/p00-r0/summary.json" in names and "sw-sweep/aggregate.csv" in names
    assert not any("p01-r0" in n for n in names)
    assert "1 of 2 points finished" in readme and "--point p00-r0" in readme
    assert verify(zip_path) == []


def test_cluster_workers_are_those_offering_a_machine() -> None:
    info = {"workers": {"tcp://a:1": {"resources": {"machine": 1}}, "tcp://b:1": {"resources": {}},
                        "tcp://c:1": {}}}
    assert service_cluster.machine_workers(info) == ["tcp://a:1"]
    seen = iter([{"workers": {}}, {"workers": {}}, info])  # the worker registers on the third look
    assert service_cluster.wait_for_machine_workers(lambda: next(seen), wait_s=5, poll_s=0.01) == ["tcp://a:1"]
    assert service_cluster.wait_for_machine_workers(lambda: {"workers": {}}, wait_s=0.05, poll_s=0.01) == []


def verdict(faithful: bool) -> dict[str, object]:
    reasons = [] if faithful else ["the machine was 99% busy while the flows ran (limit 95%): no CPU headroom",
                                   "flow f1: its trace has a 1.50 s gap (limit 1 s): the samplers were starved"]
    return {"faithful": faithful, "reasons": reasons, "advice": None if faithful else "run fewer flows",
            "paths": [], "links": {}}


def test_summary_metrics_carry_the_fidelity_verdict_and_old_summaries_have_none() -> None:
    def faithful(more: dict[str, object]) -> object:
        return sweep_report.summary_metrics(read_summary(summary(10.0, 30.0, 0.9, 4) | more))["faithful"]

    assert faithful({}) is None  # made before verdicts
    assert faithful({"fidelity": verdict(True)}) == 1 and faithful({"fidelity": verdict(False)}) == 0
    empty = sweep_report.summary_metrics(read_summary({}))
    assert empty["faithful"] is None and empty["throughput_mbps"] == 0


def test_sweep_rows_and_page_count_faithful_points_and_name_the_unfaithful_ones(tmp_path: Path) -> None:
    plan = sweep.plan_sweep(doc(params={"topology_args.rtt_ms": [10, 20]}, repeat=2))
    sweep.prepare_directory(plan, tmp_path)
    verdicts = {"p00-r0": verdict(True), "p00-r1": verdict(False), "p01-r0": None, "p01-r1": verdict(True)}
    for point in plan.points:
        run = fake_point_dir(tmp_path, point, finished=True)
        if verdicts[point.id] is not None:
            (run / "summary.json").write_text(json.dumps(summary(10.0, 30, 0.9, 1) | {"fidelity": verdicts[point.id]}))
    table = sweep.write_aggregates(plan, tmp_path)
    assert table["faithful"].tolist() == [1, 0, pd.NA, 1]
    csv = (tmp_path / "aggregate.csv").read_text().splitlines()
    column = csv[0].split(",").index("faithful")
    assert [line.split(",")[column] for line in csv[1:]] == ["1", "0", "", "1"]
    means = pd.read_csv(tmp_path / "aggregate_mean.csv")
    assert means["faithful_n"].tolist() == [1, 1] and means["assessed_n"].tolist() == [2, 1]
    assert not any(c.startswith("faithful_mean") for c in means.columns)
    page = (tmp_path / "sweep.html").read_text()
    assert "2 of 4 finished points faithful; 1 not faithful; 1 not assessed" in page
    assert "<strong>p00-r1</strong> (topology_args.rtt_ms=10 seed=11): the machine was 99% busy" in page
    assert "its trace has a 1.50 s gap" not in page  # the first reason only
    brief = sweep_run._brief(read_summary(summary(1, 1, 1, 1) | {"fidelity": verdict(False)}))
    assert "NOT FAITHFUL: the machine was 99% busy" in brief


def test_a_sweep_of_old_runs_has_an_empty_faithful_column(tmp_path: Path) -> None:
    plan = sweep.plan_sweep(doc(params={"topology_args.rtt_ms": [10, 20]}))
    sweep.prepare_directory(plan, tmp_path)
    for point in plan.points:
        fake_point_dir(tmp_path, point, finished=True)
    sweep.write_aggregates(plan, tmp_path)
    assert pd.read_csv(tmp_path / "aggregate.csv")["faithful"].isna().all()
    assert pd.read_csv(tmp_path / "aggregate_mean.csv")["assessed_n"].tolist() == [0, 0]
    assert "Emulation fidelity: not assessed" in (tmp_path / "sweep.html").read_text()


def test_cluster_commands_offer_one_machine_per_worker() -> None:
    import argparse
    import sys

    from fastlab.cli.sweep import cluster_argv

    worker = cluster_argv("worker", argparse.Namespace(address="tcp://10.0.0.5:8786", host="10.0.0.7",
                                                       local_directory=None))
    assert worker[:4] == [sys.executable, "-m", "dask", "worker"] and "tcp://10.0.0.5:8786" in worker
    assert worker[worker.index("--resources") + 1] == "machine=1" and worker[worker.index("--nthreads") + 1] == "4"
    assert worker[worker.index("--preload") + 1] == "fastlab.service.worker"  # cleans up dead runs
    web = cluster_argv("worker", argparse.Namespace(address="tcp://10.0.0.5:8786", host=None, local_directory=None),
                       "machine=1,runs=4,cores=1")
    assert web[web.index("--resources") + 1] == "machine=1,runs=4,cores=1"
    scheduler = cluster_argv("scheduler", argparse.Namespace(host="10.0.0.5", port=8786, scheduler_file=None))
    assert scheduler[3] == "scheduler" and scheduler[scheduler.index("--port") + 1] == "8786"
    assert "--resources" not in scheduler


@pytest.mark.parametrize("text, message", [
    ("sweep: {params: [1\n", "spec: not valid YAML at line 2"),
    ("sweep: " + "[" * 5000 + "]" * 5000 + "\n", "spec: nested deeper than"),
    ("name: x\n" + "#" * 1_000_001 + "\n", "spec: larger than 1,000,000 characters"),
])
def test_hostile_sweep_files_give_one_line(tmp_path: Path, text: str, message: str) -> None:
    """The sweep file reader is the spec's (spec.parse_yaml): broken, absurdly nested or over-long
    files are refused with one line, before anything is planned."""
    path = tmp_path / "sweep.yaml"
    path.write_text(text)
    with pytest.raises(SpecError) as err:
        sweep.load_sweep(path)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


@pytest.mark.parametrize("content", [
    b"{not json", b"[1, 2]", b'{"name": "x"}', b'{"name": "x", "digest": "d", "definition": {}, "parameters": {}, '
    b'"repetitions": 1, "points": [], "colour": 1}', b"\xff\xfe\x00", b"[" * 10_000 + b"]" * 10_000,
    b'{"name": "x", "digest": "d", "definition": {}, "parameters": {}, "repetitions": 1, "points": [{"id": 1}]}',
])
def test_status_of_a_corrupt_sweep_json_is_one_line(tmp_path: Path, content: bytes) -> None:
    """`fastlab sweep status` on a sweep folder whose sweep.json is not what fastlab writes (not JSON, a
    list, a key missing or unknown, invalid UTF-8, deep nesting): exit 2 and one line naming the file."""
    from tests.conftest import fastlab

    (tmp_path / "sweep.json").write_bytes(content)
    proc = fastlab("sweep", "status", str(tmp_path))
    assert proc.returncode == 2 and "sweep.json" in proc.stderr, proc.stderr[-500:]
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


# --- issue 47, finding 2: a crafted sweep.json must not make a resume remove paths ---------------------

def _resumable(tmp_path: Path) -> tuple[Any, Path]:
    """A two-point sweep's folder as `prepare_directory` leaves it (nothing run), and its plan."""
    from fastlab.sweep.points import plan_sweep, prepare_directory
    document = {"name": "crafted", "topology": "dumbbell", "duration_s": 2,
                "flows": [{"src": "h1", "dst": "h2", "cc": "cubic"}],
                "sweep": {"params": {"seed": [1, 2]}}}
    plan = plan_sweep(document)
    directory = tmp_path / "sweep"
    prepare_directory(plan, directory)
    return plan, directory


@pytest.mark.parametrize("crafted", ["../../victim", "/ABS/victim", "..", ".", "", "a/b", "p00-r0/../../victim",
                                     "\x00", 7, None])
def test_a_crafted_point_id_removes_nothing_and_is_one_line(tmp_path: Path, crafted: Any) -> None:
    """`fastlab sweep run X.yaml --out DIR` on a folder whose sweep.json carries a point id that is a path
    (digest matching) removed that path with rmtree. Now the resume refuses the folder in one line and
    nothing outside (or inside) it is touched."""
    from fastlab.sweep.points import SweepError, prepare_directory
    plan, directory = _resumable(tmp_path)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious").write_text("keep me")
    state_path = directory / "sweep.json"
    state = json.loads(state_path.read_text())
    if isinstance(crafted, str):
        crafted = crafted.replace("/ABS", str(tmp_path))
    state["points"][0]["id"] = crafted
    state_path.write_text(json.dumps(state))
    before = state_path.read_text()
    with pytest.raises(SweepError) as err:
        prepare_directory(plan, directory)
    assert "\n" not in str(err.value) and "sweep.json" in str(err.value)
    assert (victim / "precious").read_text() == "keep me"
    assert state_path.read_text() == before


def test_a_point_folder_that_is_a_symlink_is_not_followed(tmp_path: Path) -> None:
    """A point's folder replaced by a link to elsewhere: the resume refuses it instead of removing what the
    link points at."""
    from fastlab.sweep.points import SweepError, prepare_directory
    plan, directory = _resumable(tmp_path)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious").write_text("keep me")
    (directory / "points" / plan.points[0].id).symlink_to(victim)
    with pytest.raises(SweepError, match="symbolic link"):
        prepare_directory(plan, directory)
    assert (victim / "precious").read_text() == "keep me"


def test_an_incoming_link_is_removed_not_followed(tmp_path: Path) -> None:
    from fastlab.sweep.points import prepare_directory
    plan, directory = _resumable(tmp_path)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious").write_text("keep me")
    (directory / "points" / ".incoming-p00-r0").symlink_to(victim)
    prepare_directory(plan, directory)
    assert not (directory / "points" / ".incoming-p00-r0").exists()
    assert (victim / "precious").read_text() == "keep me"
