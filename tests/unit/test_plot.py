"""Publication figures and delay percentiles (issue 51 item 2) on recorded runs: `fastlab plot RUN --format
pdf|svg|png` writes files a test opens (the PDF's header and page count, the SVG's axes labels and series by
their element ids, the PNG's size); a comparison and a sweep with repetitions draw theirs; summary.json's RTT
percentiles equal a direct computation on the samples; older summaries, without them, load, and
fastlab.results computes them from their traces."""

from __future__ import annotations

import json
import math
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd
import pytest

from fastlab.base.record import Verdict, read_summary, to_json
from fastlab.measure import analysis
from fastlab.results import api as results
from fastlab.results import figures
from tests.conftest import fastlab

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "examples" / "notebooks" / "data"
SWEEP = DATA / "fast-buffer"  # buffer_bdp 0.5..4, repeat 3, every trace column recorded
RUN = SWEEP / "points" / "p01-r0"
CUBIC = DATA / "cubic-buffer" / "points" / "p01-r0"
FIVE = REPO / "labs" / "07-loss-vs-delay" / "recorded" / "full" / "p2e-3"  # five algorithms on one link
OLD = REPO / "labs" / "02-fast-equilibrium" / "recorded" / "short" / "equilibrium"  # trimmed traces: no srtt
SVG = "{http://www.w3.org/2000/svg}"


def svg_texts_and_ids(path: Path) -> tuple[set[str], set[str]]:
    root = ET.parse(path).getroot()  # noqa: S314 - our own file, written by the test
    texts = {"".join(e.itertext()).strip() for e in root.iter(f"{SVG}text")}
    ids = {e.get("id", "") for e in root.iter(f"{SVG}g")}
    return texts, ids


def pdf_pages(data: bytes) -> int:
    return len(re.findall(rb"/Type\s*/Page(?![s\w])", data))


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile by hand: linear between the two nearest ranks (numpy's default, written out)."""
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    lo, hi = math.floor(rank), math.ceil(rank)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (rank - lo)


# --- delay percentiles ------------------------------------------------------------------------------

def test_summary_rtt_percentiles_equal_a_direct_computation_on_the_samples() -> None:
    """The engine's summary (analysis.summarize on the recorded flows.csv) against the samples counted by
    hand: srtt_ms over the flow's whole trace, zeros and missing values left out."""
    run = results.load(FIVE)
    flows = run.flows.assign(cwnd_pkts=float("nan"), retransmits=0)  # trimmed to what its checks read
    infos = [analysis.FlowInfo(f.id, f.src or "", f.dst or "", f.cc or "", f.start_s or 0, f.stop_s or 0)
             for f in run.summary.flows]
    summary = analysis.summarize(infos, flows, {}, pd.DataFrame(), {})
    checked = 0
    for flow in summary.flows:
        samples = [float(v) for v in flows.loc[flows["flow"] == flow.id, "srtt_ms"]
                   if v == v and float(v) > 0]  # noqa: PLR0124 - NaN is not equal to itself
        assert len(samples) > 100
        for name, q in (("rtt_p50_ms", 50), ("rtt_p95_ms", 95), ("rtt_p99_ms", 99)):
            assert getattr(flow, name) == pytest.approx(percentile(samples, q), abs=1e-4), (flow.id, name)
        assert flow.rtt_p50_ms <= flow.rtt_p95_ms <= flow.rtt_p99_ms <= max(samples)
        checked += 1
    assert checked == 5
    # through summary.json and back: the fields keep their values, and say their unit
    again = read_summary(to_json(summary))
    assert again.flows[0].rtt_p95_ms == summary.flows[0].rtt_p95_ms
    from fastlab.base.record import units
    assert units()["rtt_p99_ms"] == "ms"


def test_a_flow_without_rtt_samples_has_no_percentiles() -> None:
    rows = pd.DataFrame({"flow": ["f1"] * 3, "t": [0.0, 0.05, 0.1], "srtt_ms": [0.0, float("nan"), 0.0]})
    assert analysis.rtt_percentiles(rows) == {"rtt_p50_ms": None, "rtt_p95_ms": None, "rtt_p99_ms": None}
    assert analysis.rtt_percentiles(rows.drop(columns="srtt_ms"))["rtt_p95_ms"] is None
    one = pd.DataFrame({"flow": ["f1"], "t": [0.0], "srtt_ms": [41.5]})
    assert analysis.rtt_percentiles(one) == {"rtt_p50_ms": 41.5, "rtt_p95_ms": 41.5, "rtt_p99_ms": 41.5}


def test_older_summaries_load_and_results_computes_their_percentiles() -> None:
    """A summary.json written before the percentiles (every recording here) loads with them None; Run.delay()
    then computes them from flows.csv with the same function, and says so; a trimmed trace has none."""
    raw = json.loads((RUN / "summary.json").read_text())
    assert "rtt_p95_ms" not in raw["flows"][0] and "schema_version" not in raw
    assert read_summary(raw).flows[0].rtt_p95_ms is None
    run = results.load(RUN)
    delay = run.delay()
    samples = analysis.rtt_samples(run.flows[run.flows["flow"] == "f1"])
    assert delay.loc["f1", "source"] == "traces" and delay.loc["f1", "rtt_samples"] == len(samples) > 100
    assert delay.loc["f1", "rtt_p99_ms"] == pytest.approx(percentile(list(samples), 99), abs=1e-4)
    trimmed = results.load(OLD).delay()
    assert trimmed["rtt_p50_ms"].isna().all() and trimmed["source"].isna().all()


# --- fastlab plot ---------------------------------------------------------------------------------------

def test_fastlab_plot_run_writes_pdf_and_svg_a_test_opens(tmp_path: Path) -> None:
    """The acceptance line: PDF and SVG of a recorded run, non-empty, with the expected axes and series."""
    got = fastlab("plot", str(FIVE), "--format", "pdf", "--out", str(tmp_path / "pdf"))
    assert got.returncode == 0, got.stderr
    written = [Path(line) for line in got.stdout.split()]
    assert [p.name for p in written] == [f"p2e-3-{n}.pdf" for n in ("timeseries", "cdf", "box")]
    for path in written:
        data = path.read_bytes()
        assert data.startswith(b"%PDF-1.") and data.rstrip().endswith(b"%%EOF") and len(data) > 5_000
        assert pdf_pages(data) == 1, path
    assert b"FontFile2" in written[0].read_bytes()  # TrueType embedded (pdf.fonttype 42), no Type 3 fonts
    got = fastlab("plot", str(FIVE), "--format", "svg", "--out", str(tmp_path / "svg"))
    assert got.returncode == 0, got.stderr
    texts, ids = svg_texts_and_ids(tmp_path / "svg" / "p2e-3-timeseries.svg")
    assert {"goodput (Mb/s)", "cwnd (packets)", "queue (packets)", "RTT (ms)",
            "time since the flows started (s)"} <= texts
    assert {f"f{i} ({cc})" for i, cc in enumerate(("reno", "cubic", "hstcp", "bbr", "fast"), 1)} <= texts
    assert {f"goodput-f{i}" for i in range(1, 6)} | {f"rtt-f{i}" for i in range(1, 6)} <= ids
    assert "theory-goodput-0" in ids and "10 Mb/s" in texts  # the bottleneck's capacity, the report's line
    assert "Mathis 26.2 pkts" in texts  # five flows' one line, said once
    texts, ids = svg_texts_and_ids(tmp_path / "svg" / "p2e-3-cdf.svg")
    assert {"RTT (ms)", "goodput (Mb/s)", "fraction of samples"} <= texts
    assert {i for i in ids if i.startswith("cdf-rtt-")} == {f"cdf-rtt-f{i}__{cc}_" for i, cc in
                                                             enumerate(("reno", "cubic", "hstcp", "bbr", "fast"), 1)}
    texts, ids = svg_texts_and_ids(tmp_path / "svg" / "p2e-3-box.svg")
    assert len([i for i in ids if i.startswith("box-rtt-")]) == 5 and "f4 (bbr)" in texts


def test_a_run_with_every_trace_draws_every_panel_and_its_theory(tmp_path: Path) -> None:
    """One FAST flow: window, queue and RTT drawn with FAST's equilibrium lines (αD/(D−d), Σα, d and d+Σα/C);
    the PNG is one column (3.5 in) at 300 dpi."""
    got = fastlab("plot", str(RUN), "--format", "svg", "--figure", "timeseries", "--out", str(tmp_path))
    assert got.returncode == 0, got.stderr
    texts, ids = svg_texts_and_ids(tmp_path / "p01-r0-timeseries.svg")
    assert {"goodput-f1", "cwnd-f1", "rtt-f1", "queue-bottleneck"} <= ids
    assert {"theory-cwnd-0", "theory-queue-0", "theory-rtt-0", "theory-rtt-1"} <= ids
    assert "Σα = 20 pkts" in texts and "not in the traces" not in texts
    got = fastlab("plot", str(RUN), "--format", "png", "--figure", "box", "--out", str(tmp_path))
    assert got.returncode == 0, got.stderr
    png = (tmp_path / "p01-r0-box.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert 900 <= width <= 3.5 * 300 + 10 and 300 < height < width  # a column wide, cropped to its contents


def test_a_comparison_and_a_sweep_with_repetitions(tmp_path: Path) -> None:
    got = fastlab("plot", str(RUN), str(CUBIC), "--format", "svg", "--out", str(tmp_path))
    assert got.returncode == 0, got.stderr
    texts, ids = svg_texts_and_ids(tmp_path / "compare-timeseries.svg")
    assert {"fast", "cubic"} <= texts and {"cwnd-fast-f1", "cwnd-cubic-f1"} <= ids  # named by algorithm
    got = fastlab("plot", str(SWEEP), "--format", "svg", "--out", str(tmp_path))
    assert got.returncode == 0, got.stderr
    assert [Path(p).name for p in got.stdout.split()] == [f"fast-buffer-{n}.svg" for n in figures.FIGURES]
    texts, ids = svg_texts_and_ids(tmp_path / "fast-buffer-repeats.svg")
    assert {"buffer_bdp", "RTT p95 (ms)", "goodput (Mb/s)"} <= texts
    assert {f"{v}\nn=3" for v in ("0.5", "1", "2", "4")} <= texts or \
        {"0.5", "1", "2", "4", "n=3"} <= {t for text in texts for t in text.split("\n")}
    assert len([i for i in ids if i.startswith("box-rtt_p95_ms-")]) == 4
    texts, ids = svg_texts_and_ids(tmp_path / "fast-buffer-cdf.svg")
    assert {"buffer_bdp=0.5", "buffer_bdp=4"} <= texts


def test_the_sweep_pools_only_faithful_repetitions(tmp_path: Path) -> None:
    """A point whose verdict is not faithful is left out of the sweep's figures, and named."""
    import shutil

    sweep = tmp_path / "sweep"
    shutil.copytree(SWEEP, sweep)
    record = read_summary((sweep / "points" / "p00-r1" / "summary.json").read_text())
    record.fidelity = Verdict(faithful=False, reasons=["made unfaithful by the test"])
    (sweep / "points" / "p00-r1" / "summary.json").write_text(to_json(record))
    subject = figures.for_sweep(results.load(sweep))
    assert subject.left_out == ["p00-r1: not faithful"]
    assert [len(g.runs) for g in subject.groups] == [2, 3, 3, 3]


@pytest.mark.parametrize(("args", "words"), [
    (["/nonexistent/run"], "/nonexistent/run: no such run, sweep or bundle"),
    ([str(RUN), "--format", "gif"], "invalid choice: 'gif'"),
    ([str(RUN), "--figure", "repeats"], "--figure repeats: a run has the figures timeseries, cdf, box"),
    ([str(SWEEP), str(RUN)], "plot a sweep on its own"),
    ([str(REPO / "labs")], "not a finished run"),
])
def test_bad_input_is_one_line_and_writes_nothing(tmp_path: Path, args: list[str], words: str) -> None:
    got = fastlab("plot", *args, "--out", str(tmp_path / "out"))
    assert got.returncode == 2 and words in got.stderr and len(got.stderr.strip().splitlines()) == 1, got.stderr
    assert not (tmp_path / "out").exists()


def test_figures_do_not_load_matplotlib_until_drawn() -> None:
    """`import fastlab`, the CLI's parser and fastlab.results.figures leave matplotlib unloaded."""
    import subprocess

    code = ("import sys, fastlab, fastlab.cli, fastlab.results.figures, fastlab.results.api; "
            "fastlab.cli.build_parser(); print('matplotlib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}, cwd=REPO)
    assert out.stdout.strip() == "False"


def test_a_bundle_is_plotted_and_its_unpacked_copy_is_gone(tmp_path: Path) -> None:
    """`fastlab plot BUNDLE.zip`: the bundle (a run of schema version 0) is verified and unpacked into a scratch
    folder of the command's own, which is gone once the figure is written (a leftover per plot, before)."""
    import os
    import subprocess

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    out = tmp_path / "figures"
    proc = subprocess.run([sys.executable, "-m", "fastlab", "plot", str(REPO / "tests/fixtures/bundles/run-v0.zip"),
                           "--format", "svg", "--figure", "cdf", "--out", str(out)], capture_output=True, text=True,
                          timeout=120, check=False, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(scratch)})
    assert proc.returncode == 0, proc.stderr
    written = [Path(line) for line in proc.stdout.split() if line.endswith(".svg")]
    assert written and written[0].stat().st_size > 1000
    assert list(scratch.iterdir()) == []
