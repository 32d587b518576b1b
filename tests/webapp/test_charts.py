"""Readable run charts (issue 14 item 5): flows and links on separate charts, one unit per axis,
goodput smoothing stated on its chart, an x axis spanning the run from the start. The run is a
folder written here (a FAST alpha 30 flow under 1 % random loss, 10 s at 20 Hz, noisy goodput):
no experiment runs."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from tests.webapp.conftest import ARTIFACTS, wait_until, watch
from webapp import create_app

RUN = "20261124-110000-fast-loss-wcha001"
DURATION = 10
HZ = 20


def raw_goodput(i: int) -> float:
    """20 Hz goodput that swings 0..40 Mb/s around 5 (as a lossy FAST flow's does)."""
    return 40.0 if i % 8 == 0 else (0.0 if i % 8 == 4 else 5.0)


def write_lossy_fast_run(root: Path, run_id: str = RUN, backlog: float = 2.6, utilization: float = 0.27,
                         loss_drops: int = 40, arrivals: int = 4000) -> Path:
    """A finished run's folder with partial traces (as the live stream replays them)."""
    run = root / run_id
    run.mkdir(parents=True)
    spec = {"name": "fast-loss", "topology": "dumbbell", "topology_args": {"rate_mbps": 20, "rtt_ms": 40},
            "duration_s": DURATION, "seed": 1, "sample_hz": HZ,
            "flows": [{"src": "h1", "dst": "h2", "cc": "fast", "cc_args": {"alpha": 30}}],
            "links": {"bottleneck": {"loss": {"model": "bernoulli", "rate": 0.01}}}}
    (run / "spec.yaml").write_text(json.dumps(spec))
    (run / "environment.json").write_text(json.dumps({
        "run": {"name": "fast-loss", "prefix": "fcha", "started": "2026-11-24T11:00:00+00:00"},
        "kernel": "6.18", "backends": {}}))
    (run / "summary.json").write_text(json.dumps({
        "flows": [{"id": "f1", "src": "h1", "dst": "h2", "cc": "fast", "throughput_mbps": 20 * utilization,
                   "mean_rtt_ms": 41.5, "min_rtt_ms": 40.0, "mean_cwnd_pkts": 20.0, "retransmits": loss_drops}],
        "links": [{"id": "bottleneck", "capacity_mbps": 20, "utilization": utilization,
                   "mean_backlog_pkts": backlog, "queue_drops": 0, "loss_drops": loss_drops, "drops": loss_drops,
                   "arrivals_pkts": arrivals}],
        "jain_index": 1.0}))
    rnd = random.Random(1)
    lines = []
    tx = 0
    for i in range(DURATION * HZ):
        t = round(i / HZ, 3)
        lines.append({"kind": "flow", "t": t, "flow": "f1", "cwnd_pkts": 20 + 10 * math.sin(i / 9),
                      "srtt_ms": 41 + rnd.random(), "goodput_mbps": raw_goodput(i)})
        tx += 25_000
        for direction, rate in (("forward", tx), ("reverse", tx // 40)):
            lines.append({"kind": "link", "t": t, "link": "bottleneck", "direction": direction,
                          "backlog_pkts": backlog if direction == "forward" else 0, "tx_bytes": rate})
        # an access link no flow uses (the dumbbell's h3-h4 pair): idle all run
        lines.append({"kind": "link", "t": t, "link": "h3-access", "direction": "forward", "backlog_pkts": 0,
                      "tx_bytes": 0})
        if i % 2 == 0:
            lines.append({"kind": "event", "t": t, "flow": "f1", "event": "update", "base_rtt_us": 40_000,
                          "avg_rtt_us": 41_000 + 500 * math.sin(i / 7), "target": 25, "cwnd": 22})
    (run / "partial.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return run


TRACES = "id => (document.getElementById(id).data || []).map(t => t.name)"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("width,height", [(1440, 900), (1024, 768)])
def test_flows_links_units_smoothing_and_the_whole_run_on_the_x_axis(tmp_path: Path, live_server_factory, browser,
                                                                    width: int, height: int) -> None:
    write_lossy_fast_run(tmp_path)
    server = live_server_factory(create_app(results_root=tmp_path, start_worker=False, cleanup_on_start=False))
    page = browser.new_page(viewport={"width": width, "height": height})
    problems = watch(page)
    page.goto(f"{server.url}/runs/{RUN}")
    # the x axis spans the run from the start, before and after the traces arrive
    assert page.evaluate("document.getElementById('chart-goodput').layout.xaxis.range") == [0, DURATION]
    wait_until(page, "document.body.dataset.streamEnded === 'done'", timeout=20_000)
    wait_until(page, "(document.getElementById('chart-goodput').data[0] || {x: []}).x.length === 200")
    for chart in ("chart-goodput", "chart-links", "chart-cwnd", "chart-queue", "chart-fast-rtt", "chart-fast-window"):
        assert page.evaluate(f"document.getElementById('{chart}').layout.xaxis.range") == [0, DURATION], chart
    # flows and links apart: goodput only of flows, the link's data direction on its own chart
    assert page.evaluate(f"({TRACES})('chart-goodput')") == ["f1"]
    # an idle access link draws no flat 0 line, and the bottleneck is the darkest (issue 32: an unused
    # h4-access link was drawn darker than the bottleneck)
    assert page.evaluate(f"({TRACES})('chart-links')") == ["bottleneck link rate"]
    assert page.evaluate("document.getElementById('chart-links').data[0].line.color") == "#222222"
    link_rate = page.evaluate("document.getElementById('chart-links').data[0].y")
    assert abs(sorted(link_rate)[len(link_rate) // 2] - 25_000 * 8 * HZ / 1e6) < 0.01  # 4 Mb/s
    # one unit per axis: FAST's RTT estimates (ms) apart from its windows (packets)
    assert page.evaluate("document.getElementById('chart-fast-rtt').layout.yaxis.title.text") == "RTT (ms)"
    assert page.evaluate(f"({TRACES})('chart-fast-rtt')") == ["f1 baseRTT", "f1 avgRTT"]
    assert page.evaluate("document.getElementById('chart-fast-window').layout.yaxis.title.text") == "window (packets)"
    assert page.evaluate(f"({TRACES})('chart-fast-window')") == ["f1 target window", "f1 cwnd"]
    # FAST's target a lighter shade of the flow's colour than its cwnd (they were one colour)
    target, cwnd = page.evaluate("document.getElementById('chart-fast-window').data.map(t => t.line.color)")
    assert cwnd == "#1f77b4" and target == "#8fbbda", (target, cwnd)
    assert page.locator("#chart-fast").count() == 0
    assert page.evaluate(f"({TRACES})('chart-queue')") == ["bottleneck forward backlog"]  # ACKs' queue: empty
    # smoothing: over 10 of the flow's RTTs by default (issue 50), stated on the chart; off shows the raw
    # 0..40 Mb/s swings
    title = "document.getElementById('chart-goodput').layout.title.text"
    ys = "document.getElementById('chart-goodput').data[0].y"
    assert page.evaluate(title) == "Goodput per flow — moving average over 10 RTTs (f1 0.40 s)"
    smooth = page.evaluate(ys)
    assert max(smooth[8:]) < 15 and min(smooth[8:]) > 3, (max(smooth[8:]), min(smooth[8:]))
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator("#chart-controls").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / f"webapp-11-charts-{width}.png"))
    page.select_option("#smooth", "1")
    wait_until(page, f"{title}.startsWith('Goodput per flow — raw 20 Hz')")
    assert page.evaluate(ys) == [raw_goodput(i) for i in range(200)]
    page.select_option("#smooth", "20")
    wait_until(page, f"{title}.includes('20 samples (1.00 s)')")
    assert max(page.evaluate(ys)[20:]) < 11
    page.screenshot(path=str(ARTIFACTS / f"webapp-11-charts-{width}-full.png"), full_page=True)
    # the automatic note and the response function at the measured loss rate (40 of 4000 packets: 1 %)
    note = page.inner_text("#what-happened")
    assert "bottleneck: utilization 0.27, mean backlog 2.6 packets over the whole run ≪ α = 30: losses (random " \
           "loss of 1 %) keep cutting FAST's window" in note, note
    assert "standard TCP's response function 1.22/√p gives 12" in note
    shapes = page.evaluate("document.getElementById('chart-cwnd').layout.shapes.map(s => s.y0)")
    assert 12.2 in shapes and 96.7 in shapes, shapes  # Mathis at p = 1 %, FAST's window alpha*D/q
    assert "Mathis" in page.inner_text("#theory-note")
    page.locator("#what-happened").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / f"webapp-13-what-happened-{width}.png"))
    assert problems == [], problems


@pytest.mark.timeout(60)
def test_fast_at_equilibrium_is_said_so_without_loss_lines(tmp_path: Path, live_server_factory, browser) -> None:
    write_lossy_fast_run(tmp_path, backlog=29.8, utilization=0.99, loss_drops=0)
    server = live_server_factory(create_app(results_root=tmp_path, start_worker=False, cleanup_on_start=False))
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    problems = watch(page)
    page.goto(f"{server.url}/runs/{RUN}")
    assert page.inner_text("#what-happened li") == (
        "bottleneck: utilization 0.99, mean backlog 29.8 packets over the whole run ≈ α = 30: FAST at equilibrium "
        "(the queue holds the sum of the alphas, the link is full)")
    wait_until(page, "document.body.dataset.streamEnded === 'done'", timeout=20_000)
    assert "Mathis" not in page.inner_text("#theory-note")  # nothing lost at random: no response-function line
    annotations = page.evaluate("document.getElementById('chart-cwnd').layout.annotations")
    assert not any("Mathis" in a["text"] for a in annotations)
    assert problems == [], problems


CHART_STATE = """() => Object.fromEntries([...document.querySelectorAll('.chart')].map((d) => [d.id, {
  title: d.layout.title.text, x: d.layout.xaxis.range,
  traces: d.data.map((t) => [t.name, t.line.color, t.line.dash, t.x.length,
                             Math.round(1000 * t.y.reduce((a, b) => a + b, 0))]),
  shapes: (d.layout.shapes || []).map((s) => [s.x0, s.x1, s.y0, s.y1, s.line.dash, s.line.color]),
  notes: (d.layout.annotations || []).map((a) => a.text)}]))"""


@pytest.mark.timeout(180)
def test_the_report_draws_the_run_pages_charts(tmp_path: Path, live_server_factory, browser) -> None:
    """Issue 32 item 4: report.html draws with the run page's chart code (fastlab/templates/charts.js), so
    both show the same charts, titles, traces (names, colours, points, goodput's moving average), theory
    lines over their spans, markers and x range. The run was made without the web app (no
    partial.jsonl, as a CLI run): its page replays its CSVs (fastlab.results.chart_data), as the report does. It
    is a FAST flow whose α went 30 -> 60 at 4 s, a busy bottleneck and an idle access link."""
    import pandas as pd

    from fastlab.base.rundir import RunFolder
    from fastlab.define.schema import parse_spec
    from fastlab.results import report
    from fastlab.theory import explain, segments

    run = write_lossy_fast_run(tmp_path)
    samples = [json.loads(line) for line in (run / "partial.jsonl").read_text().splitlines()]
    (run / "partial.jsonl").unlink()
    for kind, name in (("flow", "flows.csv"), ("link", "links.csv"), ("event", "cc_events.csv")):
        pd.DataFrame([{k: v for k, v in s.items() if k != "kind"} for s in samples if s["kind"] == kind]) \
            .to_csv(run / name, index=False)
    env = json.loads((run / "environment.json").read_text()) | {"tools": {}, "congestion_control": {"applied": [
        {"at_s": 4.0, "host": "h1", "cc": "fast", "args": {"alpha": 60}, "live": True}]}}
    (run / "environment.json").write_text(json.dumps(env))
    folder = RunFolder(run)
    spec, summary = parse_spec(folder.spec()), folder.summary()
    environment = folder.environment()
    refs = explain.response_lines(segments.reference_spans(spec, segments.applied_changes(environment)), summary)
    folder.write_report(report.render(folder.path("spec.yaml").read_text(), summary, environment, folder.flows(),
                                      folder.links(), folder.events(), refs, spec.duration_s))
    app = create_app(results_root=tmp_path, start_worker=False, cleanup_on_start=False)
    server = live_server_factory(app)
    states = {}
    for url, ready in ((f"/runs/{RUN}", "document.body.dataset.streamEnded"),
                       (f"/runs/{RUN}/report", "document.body.dataset.ready")):
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        problems = watch(page)
        page.goto(server.url + url)
        wait_until(page, ready, timeout=30_000)
        page.wait_for_timeout(600)  # the last coalesced draw
        states[url] = page.evaluate(CHART_STATE)
        page.screenshot(path=str(ARTIFACTS / f"webapp-14-charts-{'report' if 'report' in url else 'page'}.png"),
                        full_page=True)
        assert not problems, (url, problems)
        page.close()
    page_state, report_state = states.values()
    assert set(page_state) == {"chart-goodput", "chart-links", "chart-cwnd", "chart-rtt", "chart-queue",
                               "chart-fast-window", "chart-fast-rtt"}
    assert report_state == page_state
    queue = page_state["chart-queue"]
    assert [t[0] for t in queue["traces"]] == ["bottleneck forward backlog"]  # the idle access link left out
    sigma = sorted((x0, x1, y0) for x0, x1, y0, _y1, dash, _c in queue["shapes"] if dash == "dash" and y0 in (30, 60))
    assert sigma == [(0, 4.0, 30), (4.0, DURATION, 60)], sigma
    assert any(dash == "dot" and x0 == 4.0 for x0, _x1, _y0, _y1, dash, _c in queue["shapes"])  # the marker
    assert "h1: α 30 → 60 (live)" in queue["notes"]
    assert page_state["chart-goodput"]["title"].startswith("Goodput per flow — moving average over 10 RTTs")
    assert page_state["chart-goodput"]["x"] == [0, DURATION]


@pytest.mark.timeout(120)
def test_the_run_page_shows_where_the_round_trip_went(tmp_path: Path, live_server_factory, browser) -> None:
    """Issue 53 item 1: a finished run's page stacks each flow's RTT samples above its propagation
    (serialization, the links' queueing, the emulators' lateness, the hosts and the datapath) from flows.csv's
    delay accounting, one flow at a time (the selector), beside the record's medians (summary.json's
    delay_accounting, read through fastlab.base.record). Hand-made traces (tests/unit/test_accounting.py's):
    a 20 Mb/s bottleneck holding 9 ms, 0.05 ms late, f1's hosts adding 0.5 ms and f2's 2 ms."""
    import pandas as pd

    from fastlab.base.record import FlowDelay
    from fastlab.base.rundir import RunFolder
    from fastlab.measure import accounting
    from tests.unit.test_accounting import ACKS, DATA, flow_rows, links_of

    run = write_lossy_fast_run(tmp_path)
    (run / "partial.jsonl").unlink()
    routes = [accounting.FlowRoute(f, (DATA,), (ACKS,)) for f in ("f1", "f2")]
    flows = pd.concat([flow_rows(10, lambda s: 9.0, 0.05, host).assign(flow=f)
                       for f, host in (("f1", 0.5), ("f2", 2.0))], ignore_index=True)
    links = links_of(10, lambda s: 9.0, 0.05)
    accounts = accounting.account(routes, flows, links)
    accounting.with_columns(flows, accounts).to_csv(run / "flows.csv", index=False)
    links.to_csv(run / "links.csv", index=False)
    folder = RunFolder(run)
    summary = folder.summary()
    f1 = summary.flows[0]
    summary.flows = [f1, f1.model_copy(update={"id": "f2", "src": "h3", "dst": "h4"})]
    for flow, route in zip(summary.flows, routes, strict=True):
        flow.delay_accounting = FlowDelay.model_validate(
            accounting.flow_figures(route, accounts[flow.id], flow.min_rtt_ms))
    folder.replace_summary(summary)
    server = live_server_factory(create_app(results_root=tmp_path, start_worker=False, cleanup_on_start=False))
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    problems = watch(page)
    page.goto(f"{server.url}/runs/{RUN}")
    wait_until(page, "(document.getElementById('chart-round-trip').data || []).length > 0")
    state = """() => { const d = document.getElementById('chart-round-trip');
      return {title: d.layout.title.text, names: d.data.map((t) => t.name), last: d.data.map((t) => t.y.at(-1))}; }"""
    first = page.evaluate(state)
    assert first["title"] == "Where the round trip went — f1, above its 40 ms of propagation"
    assert len(first["names"]) == 4  # serialization, the links' queueing, the emulators' lateness, the hosts
    assert first["last"][1] == pytest.approx(9.0, abs=0.01) and first["last"][3] == pytest.approx(0.5, abs=0.01)
    page.select_option("#round-trip-flow", "f2")
    wait_until(page, "document.getElementById('chart-round-trip').layout.title.text.includes('f2')")
    assert page.evaluate(state)["last"][3] == pytest.approx(2.0, abs=0.01)
    medians = page.locator("#round-trip-medians tbody tr").all_inner_texts()
    assert [row.split("\t")[0] for row in medians] == ["f1", "f2"]
    assert "9.000" in medians[0] and "2.000" in medians[1]  # the links' queueing, f2's hosts (the record's)
    page.locator("#round-trip").screenshot(path=str(ARTIFACTS / "webapp-53-round-trip.png"))
    assert not problems, problems
    page.close()
