"""The run, compare and sweep pages' figure downloads (webapp.figures, issue 51 item 2): the same figures as
`fastlab plot`, drawn from recorded runs (copied into the results folder under run ids; no experiment runs),
and every bad value one line with a 4xx."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.webapp.conftest import REPO, good_spec
from webapp import create_app

FAST = REPO / "examples/notebooks/data/fast-buffer/points/p00-r0"  # recorded: every trace column
CUBIC = REPO / "examples/notebooks/data/cubic-buffer/points/p00-r0"
A = "20261124-100000-fast-wfig001"
B = "20261124-100100-cubic-wfig002"


@pytest.fixture
def figure_app(tmp_path: Path) -> Any:
    shutil.copytree(FAST, tmp_path / A)
    shutil.copytree(CUBIC, tmp_path / B)
    return create_app(results_root=tmp_path, start_worker=False, cleanup_on_start=False)


def test_a_run_figure_downloads_as_pdf_svg_and_png(figure_app: Any) -> None:
    client = figure_app.test_client()
    pdf = client.get(f"/api/runs/{A}/figure?name=timeseries&format=pdf")
    assert pdf.status_code == 200 and pdf.mimetype == "application/pdf"
    assert pdf.data.startswith(b"%PDF-") and len(pdf.data) > 5_000
    assert f'filename={A}-timeseries.pdf' in pdf.headers["Content-Disposition"]
    svg = client.get(f"/api/runs/{A}/figure?name=cdf&format=svg")
    assert svg.status_code == 200 and svg.mimetype == "image/svg+xml"
    assert b"RTT (ms)" in svg.data and b"goodput (Mb/s)" in svg.data
    png = client.get(f"/api/runs/{A}/figure?name=box&format=png&wide=1")
    assert png.status_code == 200 and png.data[:8] == b"\x89PNG\r\n\x1a\n"
    width = int.from_bytes(png.data[16:20], "big")
    assert width > 1500  # a page wide (7.16 in) at 300 dpi, bbox tight: well over a column's 1,050 px


def test_the_pages_offer_the_figure_button(figure_app: Any) -> None:
    client = figure_app.test_client()
    page = client.get(f"/runs/{A}").get_data(as_text=True)
    assert f'action="/api/runs/{A}/figure"' in page and 'name="format"' in page and "repeats" not in page
    page = client.get(f"/compare?runs={A},{B}").get_data(as_text=True)
    assert 'action="/api/compare/figure"' in page and f'name="runs" value="{A},{B}"' in page


def test_a_comparison_figure_names_the_runs_by_their_algorithms(figure_app: Any) -> None:
    got = figure_app.test_client().get(f"/api/compare/figure?runs={A},{B}&format=svg")
    assert got.status_code == 200, got.get_json()
    text = got.data.decode()
    assert ">fast<" in text.replace("\n", "") or "fast" in text
    assert "cubic" in text and "queue (packets)" in text and "cwnd (packets)" in text


@pytest.mark.parametrize(("query", "status", "words"), [
    ("format=gif", 400, "format: 'gif' is no format"),
    ("format=" + "x" * 5000, 400, "format: "),
    ("format=pdf%00", 400, "format: "),
    ("name=../../etc/passwd", 400, "name: '../../etc/passwd' is no figure"),
    ("name=repeats", 400, "a run has the figures timeseries, cdf, box"),
    ("wide=NaN", 400, "wide: 'NaN'"),
    ("wide=1e309", 400, "wide: "),
    ("wide=-1", 400, "wide: "),
])
def test_bad_figure_requests_are_one_line_4xx(figure_app: Any, query: str, status: int, words: str) -> None:
    got = figure_app.test_client().get(f"/api/runs/{A}/figure?{query}")
    assert got.status_code == status, got.data[:200]
    error = got.get_json()["error"]
    assert words in error and "\n" not in error and len(error) < 300


@pytest.mark.parametrize("path", ["/api/runs/..%2F..%2Fetc/figure", "/api/runs/20261124-100000-nosuch/figure",
                                  "/api/runs/%2Fetc%2Fpasswd/figure", "/api/sweeps/nosuch/figure",
                                  "/api/sweeps/..%2F..%2Fetc/figure"])
def test_unknown_or_hostile_ids_are_404(figure_app: Any, path: str) -> None:
    assert figure_app.test_client().get(path).status_code == 404


@pytest.mark.parametrize("runs", ["", A, f"{A},../etc", f"{A},{A}", "x" * 3000])
def test_bad_comparisons_are_400(figure_app: Any, runs: str) -> None:
    got = figure_app.test_client().get(f"/api/compare/figure?runs={runs}")
    assert got.status_code == 400 and got.get_json()["error"].startswith("runs: ")


def test_a_queued_run_and_an_unfinished_sweep_have_no_figure_yet(tmp_path: Path) -> None:
    app = create_app(results_root=tmp_path / "results", start_worker=False, cleanup_on_start=False)
    client = app.test_client()
    csrf = {"X-CSRF-Token": app.config["CSRF_TOKEN"]}
    run = client.post("/api/runs", json=good_spec(), headers=csrf).get_json()
    got = client.get(f"/api/runs/{run['id']}/figure")
    assert got.status_code == 409 and "no figures yet" in got.get_json()["error"]
    body = {"spec": good_spec(), "param": "flows.0.cc_args.alpha", "values": [10, 20], "repeat": 1}
    sweep = client.post("/api/sweeps", json=body, headers=csrf).get_json()
    got = client.get(f"/api/sweeps/{sweep['id']}/figure?name=repeats")
    assert got.status_code == 409 and "no finished, faithful point" in got.get_json()["error"]
    assert client.get(f"/api/sweeps/{sweep['id']}/figure?format=bmp").status_code == 400
