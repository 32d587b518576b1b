"""plotly.js kept once per results folder (issue 51 item 3): a sweep of 30 points carries one copy, not 30;
the copy is written whole or not at all; a report names where it looks. Browsers opening such reports from
disk: tests/webapp/test_report_script.py."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from fastlab.base.record import read_environment, read_summary
from fastlab.results import report
from fastlab.sweep import points as sweep
from tests.unit.test_sweep import BASE, fake_point_dir

ENVIRONMENT = {"run": {"name": "demo", "prefix": "flabcd", "started": "2026-11-24T03:00:00+00:00"},
               "kernel": "6.18", "backends": {}, "shaping": [], "tools": {}}
SCRIPT = re.compile(r"<script[^>]*>(.*?)</script>", re.S)


def page() -> str:
    empty = pd.DataFrame()
    summary = read_summary({"flows": [], "links": [], "jain_index": 1.0})
    return report.render("name: demo\n", summary, read_environment(ENVIRONMENT), empty, empty, empty)


def javascript_bytes(folder: Path) -> int:
    """Every byte of JavaScript under `folder`: .js files and the scripts inlined in its pages."""
    total = 0
    for path in folder.rglob("*"):
        if path.suffix == ".js":
            total += path.stat().st_size
        elif path.suffix == ".html":
            total += sum(len(s.encode()) for s in SCRIPT.findall(path.read_text()))
    return total


def test_a_report_looks_beside_itself_then_in_the_folders_above_and_inlines_no_library() -> None:
    html = page()
    assert len(html) < 300_000  # was 4.8 MB with plotly.js inlined
    places = re.search(r"const places = (\[.*?\]);", html).group(1)
    assert places == f'["{report.PLOTLY_FILE}", "../{report.PLOTLY_FILE}", "../../{report.PLOTLY_FILE}"]'
    assert not re.search(r"<script[^>]+src=", html)  # nothing fetched by a static tag (no CDN, no other host)


def test_a_thirty_point_sweep_holds_one_plotly_within_ten_megabytes_of_script(tmp_path: Path) -> None:
    plan = sweep.plan_sweep({**BASE, "sweep": {"params": {"topology_args.rtt_ms": list(range(10, 40))}}})
    sweep.prepare_directory(plan, tmp_path)
    html = page()
    for point in plan.points:
        (fake_point_dir(tmp_path, point, finished=True) / "report.html").write_text(html)
    sweep.write_aggregates(plan, tmp_path)
    copies = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("plotly*.js"))
    assert copies == [report.PLOTLY_FILE]  # one, in the sweep's folder, where sweep.html and the points look
    assert f'src="{report.PLOTLY_FILE}"' in (tmp_path / "sweep.html").read_text()
    total = javascript_bytes(tmp_path)
    assert total <= 10 * 1024**2, f"{total / 1024**2:.1f} MB of JavaScript"  # 30 x 4.6 MB before


def test_the_shared_copy_is_written_whole_once_and_mended(tmp_path: Path) -> None:
    first = report.share_plotly(tmp_path)
    inode = first.stat().st_ino
    assert first.read_bytes() == report.PLOTLY_SOURCE.read_bytes()
    assert report.share_plotly(tmp_path).stat().st_ino == inode  # kept, not rewritten by each run
    first.write_bytes(b"cut short")  # a copy cut by a full disk or a crash is replaced whole
    assert report.share_plotly(tmp_path).read_bytes() == report.PLOTLY_SOURCE.read_bytes()
    assert [p.name for p in tmp_path.iterdir()] == [report.PLOTLY_FILE]  # no scratch file left
