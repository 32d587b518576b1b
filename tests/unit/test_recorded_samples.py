"""A finished run made without the web app (a lab recording, a CLI run) replays its charts from its CSVs
(fastlab.service.samples.recorded_samples): parsed once per version of its tables, so a class of viewers opening
the same run costs one parse; a table that changes is parsed again."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

from fastlab.service import samples as runner
from fastlab.service.samples import iter_partial

RECORDED = Path(__file__).resolve().parents[2] / "labs" / "02-fast-equilibrium" / "recorded" / "short" / "equilibrium"


def test_a_recorded_run_is_parsed_once_for_many_viewers_and_again_when_it_changes(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(RECORDED, run)
    runner._RECORDED.clear()
    before = dict(runner.RECORDED_STATS)
    first = list(iter_partial(run))
    assert len(first) > 50 and {s["kind"] for s in first} >= {"flow", "link"}, first[:3]
    for _ in range(30):  # thirty viewers
        assert list(iter_partial(run)) == first
    assert {"hits": before["hits"] + 30, "parses": before["parses"] + 1} == runner.RECORDED_STATS
    with gzip.open(run / "flows.csv.gz", "rt") as f:
        flows = f.read().splitlines()
    with gzip.open(run / "flows.csv.gz", "wt") as f:  # the table changed
        f.write("\n".join(flows[: len(flows) // 2]) + "\n")
    second = list(iter_partial(run))
    assert runner.RECORDED_STATS["parses"] == before["parses"] + 2
    assert len([s for s in second if s["kind"] == "flow"]) < len([s for s in first if s["kind"] == "flow"])


def test_a_run_too_large_to_keep_is_parsed_for_each_viewer(tmp_path: Path, monkeypatch) -> None:
    """The cache stays bounded: a run with more samples than it keeps is not kept."""
    run = tmp_path / "run"
    shutil.copytree(RECORDED, run)
    runner._RECORDED.clear()
    monkeypatch.setattr(runner, "RECORDED_CACHE_MAX_SAMPLES", 10)
    before = runner.RECORDED_STATS["parses"]
    assert len(list(iter_partial(run))) > 10 and len(list(iter_partial(run))) > 10
    assert runner.RECORDED_STATS["parses"] == before + 2 and not runner._RECORDED
