"""The reproduction scorecard in the web app (/reproduce, webapp.reproduce) and its PNG (fastlab.results.raster):
the page's table and figure through Flask's test client, the page in Debian's Chromium (a screenshot), and the
PNG Chromium renders from the SVG read back pixel by pixel."""

from __future__ import annotations

import re
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest

from fastlab.labs.scorecard import load_claims, score
from fastlab.labs.scorecard_figure import AXIS_X0, AXIS_X1, COLOURS, ROW_H, TOP, WIDTH, height, svg
from fastlab.results.raster import svg_to_png
from tests.webapp.conftest import ARTIFACTS, watch
from webapp import create_app


def test_the_page_shows_every_claim_published_against_measured(client: Any) -> None:
    page = client.get("/reproduce")
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    claims = [c.id for c in load_claims().claims]
    assert re.findall(r'<tr data-claim="([a-z0-9-]+)"', html) == claims
    row1 = html.split('data-claim="sc2002-row-1"')[1].split("</tr>")[0]
    assert "Table 1, row 1" in row1 and "0.95 utilization" in row1 and "0.9749 (1 run)" in row1
    assert "<strong>PASS</strong>" in row1 and 'href="/labs/3"' in row1
    assert "27 pass of 27 claims" in html
    assert "TENCON 2005" in html and 'src="/reproduce/scorecard.svg"' in html
    assert 'href="/reproduce"' in client.get("/labs").get_data(as_text=True)  # in the navigation
    figure = client.get("/reproduce/scorecard.svg")
    assert figure.status_code == 200 and figure.mimetype == "image/svg+xml"
    assert figure.get_data(as_text=True) == svg(score(load_claims()))  # the CLI's figure, byte for byte


def test_a_broken_claims_file_is_said_on_the_page_in_one_line(tmp_path: Path) -> None:
    labs = tmp_path / "labs"
    labs.mkdir()
    (labs / "claims.yaml").write_text("papers: {p: {cite: c}}\nclaims: [{id: x, lab: 1.5}]\n")
    client = create_app(results_root=tmp_path / "results", start_worker=False, labs_dir=labs).test_client()
    html = client.get("/reproduce").get_data(as_text=True)
    error = re.search(r'<p class="error" id="scorecard-error">(.*?)</p>', html, re.S)
    assert error is not None and "claims[0].lab" in error.group(1) and "\n" not in error.group(1)
    assert 'id="scorecard"' not in html
    figure = client.get("/reproduce/scorecard.svg")
    assert figure.status_code == 404 and "claims[0].lab" in figure.get_data(as_text=True)
    # mended, the page shows it at once (the scorecard is kept only while its files are unchanged)
    (labs / "claims.yaml").write_text("papers: {p: {cite: c}}\nclaims: [{id: x, paper: p, where: w, lab: 1, step: s, "
                                      "check: c, scale: 1.0, published: {value: 2, unit: u, stated: s}}]\n")
    html = client.get("/reproduce").get_data(as_text=True)
    assert 'id="scorecard-error"' not in html and '<tr data-claim="x" class="verdict-unmeasured">' in html
    assert "no lab &#39;1&#39;" in html or "no lab '1'" in html


def test_the_page_in_the_browser(tmp_path: Path, live_server_factory: Any, browser: Any) -> None:
    server = live_server_factory(create_app(results_root=tmp_path / "results", start_worker=False))
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    problems = watch(page)
    page.goto(server.url + "/reproduce")
    assert page.locator("#scorecard tr[data-claim]").count() == len(load_claims().claims)
    # the figure loaded under the page's Content-Security-Policy, at its own size
    width = page.evaluate("() => { const i = document.getElementById('scorecard-figure'); "
                          "return i.complete ? i.naturalWidth : -1; }")
    assert width == WIDTH
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "webapp-reproduce.png"), full_page=True)
    assert not problems, problems


def read_png(path: Path) -> tuple[int, int, list[bytes], int]:
    """(width, height, rows of bytes, bytes a pixel) of an 8-bit RGB or RGBA PNG, its filters undone."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        header = chunk if kind == b"IHDR" else header
        idat += chunk if kind == b"IDAT" else b""
        pos += 12 + length
    width, height_px, depth, colour = struct.unpack(">IIBB", header[:10])
    assert depth == 8 and colour in (2, 6)
    bpp = 3 if colour == 2 else 4
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytes(width * bpp)
    for y in range(height_px):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            pred = [0, a, b, (a + b) // 2, a + b - c][kind] if kind < 4 else \
                min((a, b, c), key=lambda v: abs(a + b - c - v))
            line[i] = (line[i] + pred) & 0xFF
        rows.append(bytes(line))
        prev = rows[-1]
    return width, height_px, rows, bpp


def test_the_png_is_the_svg_as_chromium_renders_it(tmp_path: Path) -> None:
    """Each measured dot of the figure, read back from the PNG at the centre the SVG gives it, has its
    verdict's colour; the PNG is the SVG's size."""
    rows = score(load_claims())
    target = svg_to_png(svg(rows), tmp_path / "scorecard.png", WIDTH, height(rows))
    width, height_px, lines, bpp = read_png(target)
    assert (width, height_px) == (WIDTH, height(rows))
    checked = 0
    for i, row in enumerate(rows):
        if row.median is None:
            continue
        lo, hi = 0.0, max(1.1, row.median * 1.05) if row.claim.published.unit == "utilization" else None
        if hi is None:
            continue  # the other axes depend on the published figure too: the utilization rows suffice
        x = round(AXIS_X0 + (row.median - lo) / (hi - lo) * (AXIS_X1 - AXIS_X0))
        y = round(TOP + i * ROW_H + ROW_H / 2 + 3)
        pixel = lines[y][x * bpp:x * bpp + 3]
        want = bytes.fromhex(COLOURS[row.verdict][1:])
        assert all(abs(p - w) <= 8 for p, w in zip(pixel, want, strict=True)), (row.claim.id, pixel.hex())
        checked += 1
    assert checked == 13  # SC2002's five rows and lab 10's eight points


@pytest.mark.parametrize("missing", ["FASTLAB_CHROMIUM"])
def test_without_chromium_the_png_is_refused_in_one_line(tmp_path: Path, monkeypatch: Any, missing: str) -> None:
    from fastlab.results.raster import RasterError

    monkeypatch.setenv(missing, str(tmp_path / "no-chromium"))
    with pytest.raises(RasterError, match=r"^no PNG: no Chromium at .*no-chromium \(apt install chromium"):
        svg_to_png("<svg/>", tmp_path / "x.png", 10, 10)
    assert not (tmp_path / "x.png").exists()
