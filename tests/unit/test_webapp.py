"""The web app's results browser against real run directories written by the engine's code."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from fastlab.base.record import read_environment, read_summary
from fastlab.base.rundir import RunFolder
from fastlab.labs.kit import LABS_DIR, lab_folders
from webapp import create_app

UNFAITHFUL = {
    "faithful": False,
    "reasons": ["bottleneck (forward): the emulator's socket dropped 1114 frames (losses no link model decided)",
                "bottleneck: its emulator used 0.96 of a core (limit 0.9): it cannot absorb bursts"],
    "advice": "lower the capacities (topology_args.scale), run fewer flows, or stop other programs on this machine",
    "paths": [{"flow": "f1", "emulation_delay_ms": 92.03, "budget_ms": 0.8, "basis": "base RTT"}],
    "links": {"bottleneck": {"forward": {"late_p50_us": 1344, "late_p99_us": 90112, "late_max_us": 106014,
                                         "segments": 2448563, "sock_drops": 1114}}},
    "emulator_cores": {"bottleneck": 0.958}, "machine_busy": 0.696, "sample_gaps_s": {"f1": 0.054},
    "unmeasured": [], "thresholds": {"sock_drops_max": 0, "emulator_core_max": 0.9, "machine_busy_max": 0.95,
                                     "sample_gap_max_s": 1.0}}


def fake_run(root: Path, run_id: str, utilization: float, fidelity: dict[str, Any] | None = None) -> None:
    """A run folder written as the engine writes one (`RunFolder.write`), with made-up figures; no
    `fidelity`: an old run."""
    run = root / run_id
    run.mkdir(parents=True)
    folder = RunFolder(run)
    folder.write(
        spec_yaml="name: demo\ntopology: dumbbell\nduration_s: 5\nflows: [{src: h1, dst: h2}]\n",
        environment=read_environment({
            "run": {"name": "demo", "prefix": "flabcd", "started": "2026-11-22T05:00:00+00:00"},
            "kernel": "6.18", "backends": {"delay": {"backend": "emulator", "why": "sch_netem is missing"}}}),
        summary=read_summary({"flows": [{"id": "f1", "src": "h1", "dst": "h2", "cc": "cubic", "throughput_mbps": 47.5,
                                         "mean_rtt_ms": 60, "min_rtt_ms": 40.8, "retransmits": 3}],
                              "links": [{"id": "bottleneck", "capacity_mbps": 50, "utilization": utilization,
                                         "mean_backlog_pkts": 100, "drops": 3}], "jain_index": 1.0}
                             | ({"fidelity": fidelity} if fidelity is not None else {})))
    folder.write_report("<html>report</html>")


@pytest.fixture
def client(tmp_path: Path):
    fake_run(tmp_path, "20261122-050000-demo-flabcd", 0.98)
    app = create_app(results_root=tmp_path)
    return app.test_client()


def test_history_lists_runs_and_survives_a_restart(client, tmp_path: Path) -> None:
    page = client.get("/")
    assert page.status_code == 200 and b"demo" in page.data and b"98.0 %" in page.data  # utilization in per cent
    shutil.rmtree(tmp_path / "20261122-050000-demo-flabcd" / "report.html", ignore_errors=True)
    again = create_app(results_root=tmp_path).test_client().get("/api/runs").get_json()
    assert [r["id"] for r in again] == ["20261122-050000-demo-flabcd"]


def test_run_page_and_report(client) -> None:
    page = client.get("/runs/20261122-050000-demo-flabcd")
    assert page.status_code == 200 and b"emulator" in page.data
    # the summary tables as report.html draws them (fastlab.results.tables): headers in words, keys as tooltips
    assert b'<th title="throughput_mbps">goodput (Mb/s)</th>' in page.data and b'class="num">47.5</td>' in page.data
    assert b'data-fidelity="unassessed"' in page.data and b"Not faithful" not in page.data  # an old run
    assert client.get("/runs/20261122-050000-demo-flabcd/report").data == b"<html>report</html>"


def test_run_page_warns_when_the_emulation_was_not_faithful(tmp_path: Path) -> None:
    fake_run(tmp_path, "20261124-030000-busy-flabcd", 0.7, UNFAITHFUL)
    fake_run(tmp_path, "20261124-040000-calm-flabcd", 0.9, {**UNFAITHFUL, "faithful": True, "reasons": [],
                                                             "advice": None, "paths": []})
    client = create_app(results_root=tmp_path).test_client()
    text = client.get("/runs/20261124-030000-busy-flabcd").get_data(as_text=True)
    banner = text[text.index('id="fidelity"'):]
    # above the results (the flows table), with the reasons (escaped) and what to do, in plain words
    assert banner.index("Not faithful") < banner.index('id="summary-flows"')
    assert "socket dropped 1114 frames" in banner and "0.96 of a core" in banner
    assert "What to do:" in banner and "Lower the capacities" in banner
    assert 'id="fidelity-details"' in text and "92.03" in text
    calm = client.get("/runs/20261124-040000-calm-flabcd").get_data(as_text=True)
    assert 'data-fidelity="faithful"' in calm and "Faithful emulation" in calm and "Not faithful" not in calm
    runs = client.get("/").get_data(as_text=True)
    assert "NOT faithful" in runs and ">faithful<" in runs


@pytest.mark.parametrize("hostile", ["..%2F..%2Fetc%2Fpasswd", "nosuchrun", "%00", "a;rm -rf ~"])
def test_unknown_or_hostile_run_ids_are_404(client, hostile: str) -> None:
    assert client.get(f"/runs/{hostile}").status_code == 404
    assert client.get(f"/runs/{hostile}/report").status_code == 404


@pytest.mark.parametrize("stamp, shown", [
    ("2026-11-24T14:02:52.351+00:00", "24 Nov 2026, 14:02:52 UTC"),
    ("2026-11-24T15:02:52+01:00", "24 Nov 2026, 14:02:52 UTC"),
    ("2026-01-01T12:00:00", "1 Jan 2026, 12:00:00 UTC"),  # the history's old rows: UTC without offset
    (None, ""), ("", ""), ("not a time", "not a time"),
])
def test_times_are_shown_for_people(stamp: str | None, shown: str) -> None:
    from webapp import human_time
    assert human_time(stamp) == shown


def test_progress_lines_reach_the_run_stream_from_its_worker_thread_only() -> None:
    """The engine reports progress through `logging` ("fastlab" loggers, INFO); the web worker turns
    its own thread's records into the run's live "log" events and nothing from other threads."""
    import logging
    import threading

    from fastlab.service.samples import FASTLAB_LOG, ProgressToStream

    class Channel:
        def __init__(self) -> None:
            self.items: list[dict[str, object]] = []

        def publish(self, item: dict[str, object]) -> None:
            self.items.append(item)

    channel = Channel()
    handler = ProgressToStream(channel)  # type: ignore[arg-type]
    FASTLAB_LOG.addHandler(handler)
    level = FASTLAB_LOG.level
    FASTLAB_LOG.setLevel(logging.INFO)
    try:
        logging.getLogger("fastlab.experiment.engine").info("run %s: building %s", "flab12", "dumbbell")
        other = threading.Thread(target=lambda: logging.getLogger("fastlab.experiment.engine").info("another run"))
        other.start()
        other.join()
        logging.getLogger("fastlab.experiment.engine").debug("not progress")
    finally:
        FASTLAB_LOG.removeHandler(handler)
        FASTLAB_LOG.setLevel(level)
    assert channel.items == [{"kind": "log", "t": None, "msg": "run flab12: building dumbbell"}]


def test_the_cli_prints_progress_lines_once(capsys) -> None:
    """`fastlab` shows the engine's INFO lines on stderr, once however often it is set up."""
    import logging

    from fastlab.cli.common import show_progress

    logger = logging.getLogger("fastlab")
    before = (list(logger.handlers), logger.level, logger.propagate)
    try:
        show_progress()
        show_progress()
        logging.getLogger("fastlab.labs.kit").info("step %s (%d of %d)", "p2e-3", 2, 3)
    finally:
        logger.handlers[:], logger.level, logger.propagate = before[0], before[1], before[2]
    assert capsys.readouterr().err == "step p2e-3 (2 of 3)\n"


def test_the_landing_page_says_what_fastlab_is_and_offers_labs_then_an_experiment_then_runs(client) -> None:
    """Issue 32: the home page was an empty "Runs" list and a `sudo fastlab run` line."""
    page = client.get("/").get_data(as_text=True)
    about, labs, new, runs = (page.index(mark) for mark in ('id="about"', 'id="home-labs"', 'id="home-new"',
                                                            'id="home-runs"'))
    assert about < labs < new < runs, (about, labs, new, runs)
    assert "FAST TCP" in page[about:labs] and 'href="/new"' in page[new:runs] and "demo" in page[runs:]
    assert page[labs:new].count('href="/labs/') == len(lab_folders(LABS_DIR)) >= 9


def test_a_cubic_run_is_not_explained_against_fast(client) -> None:
    """Issue 32: every run's "What happened" said it compared the run "against FAST's equilibrium", and an
    empty shaping table printed a bare "none" under Backends."""
    page = client.get("/runs/20261122-050000-demo-flabcd").get_data(as_text=True)
    assert "FAST's equilibrium" not in page and "against the\nlink's capacity" in page
    assert "<p>none</p>" not in page


@pytest.mark.parametrize(("value", "expected"), [(3, 3.0), (0.5, 0.5), (10**400, None), (-(10**400), None),
                                                 (float("nan"), None), (float("inf"), None), (True, None),
                                                 (None, None), ("1", None), ([1], None)])
def test_a_summary_value_is_a_finite_number_or_nothing(value: object, expected: float | None) -> None:
    """What compare and sweep tables read from a summary.json (a hostile bundle's too): an int too large
    for a float is nothing, not an OverflowError."""
    from fastlab.results.tables import finite_number

    assert finite_number(value) == expected


@pytest.mark.parametrize("environment", ['{"kernel": "6.18"}', '{"run": {"name": "x"}}', '{"run": 5}', '[1, 2]',
                                         '{"run": {"name": "x", "started": "t"}, "backends": 7}'])
def test_one_broken_run_folder_does_not_break_the_history(tmp_path: Path, environment: str) -> None:
    """A folder with a summary but an environment.json missing what the history indexes (a hand-edited
    or foreign folder) is left out; the other runs are listed and every page answers."""
    fake_run(tmp_path, "20261122-050000-demo-flabcd", 0.98)
    broken = tmp_path / "20261122-060000-broken-flabce"
    broken.mkdir()
    (broken / "summary.json").write_text('{"flows": [], "links": []}')
    (broken / "environment.json").write_text(environment)
    (broken / "spec.yaml").write_text("name: broken\ntopology: dumbbell\n")
    client = create_app(results_root=tmp_path).test_client()
    listed = [r["id"] for r in client.get("/api/runs").get_json()]
    assert "20261122-050000-demo-flabcd" in listed
    assert client.get("/").status_code == 200 and client.get("/runs/20261122-050000-demo-flabcd").status_code == 200
    if "20261122-060000-broken-flabce" in listed:  # indexed with what it has: its page answers too
        assert client.get("/runs/20261122-060000-broken-flabce").status_code == 200


def test_a_module_imported_after_mininet_logs_through_plain_loggers() -> None:
    """Mininet sets every new logger's class to its own (level 25, its own stderr handler); fastlab puts
    the class back, so an engine imported after Mininet still reports INFO progress to the live page."""
    import logging

    pytest.importorskip("mininet.net")  # the check tier's virtualenv may lack Mininet
    import fastlab  # noqa: F401

    logger = logging.getLogger("fastlab.made-after-mininet")
    assert type(logger) is logging.Logger and logger.level == logging.NOTSET and not logger.handlers
