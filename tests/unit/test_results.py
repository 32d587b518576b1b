"""Results in Python (fastlab.results.api, issue 36 item 3) on lab 02's recorded runs: a run folder and a
bundle load into DataFrames with units, runs compare side by side, a sweep folder lists its points,
and anything else is refused in one line."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest

from fastlab.base.record import read_summary
from fastlab.results import api as results
from fastlab.results import bundle

REPO = Path(__file__).resolve().parents[2]
RECORDED = REPO / "labs" / "02-fast-equilibrium" / "recorded" / "short"


def test_a_run_folder_loads_into_dataframes_with_units() -> None:
    run = results.load(RECORDED / "equilibrium")
    assert isinstance(run, results.Run) and run.name == run.spec["name"]
    assert {"t", "flow", "bytes_acked"} <= set(run.flows.columns)
    assert run.flows.attrs["units"]["t"] == "s" and run.flows.attrs["units"]["bytes_acked"] == "bytes"
    assert run.faithful is True and run.fidelity is not None and run.fidelity.faithful is True
    table = run.table("flows")
    assert list(table["id"]) == [f.id for f in run.summary.flows]
    assert table.attrs["units"]["throughput_mbps"] == "Mb/s"
    assert run.segments.empty  # no parameter changed during this run


def test_runs_compare_side_by_side() -> None:
    a, b = results.load(RECORDED / "equilibrium"), results.load(RECORDED / "alphas")
    assert isinstance(a, results.Run) and isinstance(b, results.Run)
    table = results.compare([a, b])
    assert list(table.index) == ["equilibrium", "alphas"]
    assert table.loc["equilibrium", "throughput_mbps"] == pytest.approx(
        sum(f.throughput_mbps or 0 for f in a.summary.flows))
    assert table.loc["alphas", "faithful"] == int(bool(b.faithful))


def test_a_bundle_is_verified_then_loaded_and_a_tampered_one_refused(tmp_path: Path) -> None:
    zip_path = bundle.export(RECORDED / "equilibrium", tmp_path / "eq.zip")
    run = results.load(zip_path, extract_to=tmp_path / "out")
    assert isinstance(run, results.Run) and run.summary == read_summary((RECORDED / "equilibrium" / "summary.json")
                                                                         .read_text())
    tampered = tmp_path / "tampered.zip"
    with zipfile.ZipFile(zip_path) as src, zipfile.ZipFile(tampered, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            dst.writestr(info, data.replace(b'"faithful": true', b'"faithful": false')
                         if info.filename.endswith("summary.json") else data)
    with pytest.raises(results.ResultsError, match="fails verification"):
        results.load(tampered, extract_to=tmp_path / "out2")


def test_a_sweep_folder_lists_its_finished_points(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    for i, name in enumerate(("equilibrium", "alphas")):
        point = sweep / "points" / f"p{i + 1}"
        shutil.copytree(RECORDED / name, point)
        (point / "point.json").write_text(json.dumps({"name": f"p{i + 1}", "values": {"alpha": 10 * (i + 1)},
                                                      "alpha": 10 * (i + 1)}))
    shutil.copytree(RECORDED / "live", sweep / "points" / "p3")  # no point.json: not finished
    (sweep / "sweep.json").write_text("{}")
    loaded = results.load(sweep)
    assert isinstance(loaded, results.Sweep) and list(loaded.points) == ["p1", "p2"]
    table = loaded.table()
    assert list(table["point"]) == ["p1", "p2"] and list(table["alpha"]) == [10, 20]


@pytest.mark.parametrize("make", ["missing", "empty folder", "a file", "not a zip"])
def test_what_is_no_run_is_refused_in_one_line(tmp_path: Path, make: str) -> None:
    target = tmp_path / "x.zip" if make == "not a zip" else tmp_path / "thing"
    if make == "empty folder":
        target.mkdir()
    elif make == "a file":
        target.write_text("hello")
    elif make == "not a zip":
        target.write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(results.ResultsError) as err:
        results.load(target, extract_to=tmp_path / "out")
    assert "\n" not in str(err.value)
