"""The fidelity verdict (`fastlab.measure.fidelity`) and how it is shown (`fastlab.results.fidelity_view`, report.html).

Pure: the inputs are the figures the engine gathers (emulators' final stats lines, paths, CPU,
sample times), made up here. Each threshold crossed alone must give exactly its one reason.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pandas as pd
import pytest
import yaml

from fastlab.base.record import Verdict, read_environment, read_summary
from fastlab.define.ccset import fast_target_ms
from fastlab.measure import fidelity
from fastlab.results import fidelity_view, report


def judged(inputs: fidelity.Inputs) -> Verdict:
    """The verdict as a run's record holds it (fastlab.base.record.Verdict), which the views present."""
    return Verdict.model_validate(fidelity.assess(inputs))

# A dumbbell: flow f1 crosses the bottleneck forward (data) and reverse (ACKs), 40 ms base RTT.
LOSS_PATH = fidelity.PathInfo("f1", (("bottleneck", "forward"), ("bottleneck", "reverse")), 40.0)
# FAST at alpha 200 on 1 Gb/s: it aims at 2.4 ms of queue, so its budget is 0.6 ms.
FAST_PATH = fidelity.PathInfo("f1", (("bottleneck", "forward"), ("bottleneck", "reverse")), 40.0,
                              fast_target_ms(200, 1000))


def stats(p50: int = 20, p99: int = 80, drops_ab: int = 0, drops_ba: int = 0) -> dict[str, Any]:
    """An emulator's final stats line: lateness in µs per direction (ab = forward, ba = reverse)."""
    late = {"p50": p50, "p99": p99, "max": p99 * 2, "n": 10_000}
    return {"ab": {"late_us": late, "sock_drops": drops_ab}, "ba": {"late_us": dict(late), "sock_drops": drops_ba}}


def tc_samples(share: float, seconds: float = 3.0, backlog: float = 20, rate_bps: int = 10_000_000,
               every_s: float = 0.1) -> list[tuple[float, float, float]]:
    """A tc queue's samples (t, backlog packets, sent IP bytes) sending `share` of its rate."""
    n = round(seconds / every_s)
    return [(i * every_s, backlog, i * every_s * rate_bps * share / 8) for i in range(n + 1)]


def quiet(**changes: Any) -> fidelity.Inputs:
    """A run the emulation carried easily; `changes` replace fields."""
    inp = fidelity.Inputs(emulators={"bottleneck": stats()}, paths=[LOSS_PATH],
                          emulator_cores={"bottleneck": 0.3}, machine_busy=0.4,
                          sample_gaps_s={"f1": 0.06}, sample_interval_s=0.05)
    for key, value in changes.items():
        setattr(inp, key, value)
    return inp


def test_a_quiet_run_is_faithful() -> None:
    verdict = fidelity.assess(quiet())
    assert verdict["faithful"] is True and verdict["reasons"] == [] and verdict["advice"] is None
    # 20 + 20 µs median over two crossings + the largest p99 (80 µs) = 0.12 ms, budget max(0.5, 1% of 40 ms)
    assert verdict["paths"] == [{"flow": "f1", "emulation_delay_ms": 0.12, "budget_ms": 0.5, "basis": "base RTT",
                                 "idle_emulation_delay_ms": None,  # no idle-phase stats given
                                 "crossings": [["bottleneck", "forward"], ["bottleneck", "reverse"]]}]
    assert verdict["links"]["bottleneck"]["forward"]["late_p99_us"] == 80


def test_the_idle_pings_lateness_is_reported_not_judged() -> None:
    """An emulator idling between pings wakes late: what that added to the idle RTT is reported per
    path (from the stats line after the idle phase), and no flow ran then, so it is no reason."""
    idle = stats(p50=900, p99=1500)  # 0.9 + 0.9 + 1.5 ms: far above the 0.5 ms budget
    verdict = fidelity.assess(quiet(idle_emulators={"bottleneck": idle}))
    assert verdict["faithful"] is True and verdict["reasons"] == []
    assert verdict["paths"][0]["idle_emulation_delay_ms"] == 3.3
    assert verdict["paths"][0]["emulation_delay_ms"] == 0.12  # the flows' figure is the whole run's
    assert verdict["idle_links"]["bottleneck"]["reverse"]["late_p50_us"] == 900
    details = fidelity_view.details_html(Verdict.model_validate(verdict))
    assert "delay the emulators added to the idle pings" in details and "f1 3.30 ms" in details
    assert "idle pings" not in fidelity_view.details_html(judged(quiet()))  # none measured: no line


@pytest.mark.parametrize("changes, pattern", [
    ({"emulators": {"bottleneck": stats(drops_ab=7)}},
     r"^bottleneck \(forward\): the emulator's socket dropped 7 frames"),
    ({"emulators": {"bottleneck": stats(p50=100, p99=500)}, "paths": [FAST_PATH]},  # 0.7 ms > 0.6 ms
     r"^flow f1: the emulators added 0\.70 ms .* above 0\.60 ms = 0\.25 of the 2\.40 ms queue FAST aims at"),
    ({"emulators": {"bottleneck": stats(p50=100, p99=500)}},  # 0.7 ms > max(0.5 ms, 1% of 40 ms)
     r"^flow f1: the emulators added 0\.70 ms .* above 0\.50 ms = max\(0\.5 ms, 1% of the 40 ms RTT\)"),
    ({"emulator_cores": {"bottleneck": 0.95}}, r"^bottleneck: its emulator used 0\.95 of a core \(limit 0\.9\)"),
    ({"machine_busy": 0.97}, r"^the machine was 97% busy while the flows ran \(limit 95%\)"),
    ({"sample_gaps_s": {"f1": 1.5}}, r"^flow f1: its trace has a 1\.50 s gap \(limit 1 s\)"),
    ({"tc_queues": {"access": {"forward": (10_000_000, tc_samples(0.88))}}},
     r"^access \(forward\): tc delivered 88% of its 10 Mb/s over 3\.0 s with packets queued \(limit 95%\)"),
])
def test_each_threshold_crossed_alone_gives_exactly_its_reason(changes: dict[str, Any], pattern: str) -> None:
    verdict = fidelity.assess(quiet(**changes))
    assert verdict["faithful"] is False and verdict["advice"] == fidelity.ADVICE
    assert len(verdict["reasons"]) == 1, verdict["reasons"]
    assert re.search(pattern, verdict["reasons"][0]), verdict["reasons"][0]


def test_the_budget_is_fasts_alpha_queue_or_a_share_of_the_rtt() -> None:
    slight = stats(p50=100, p99=350)  # 0.55 ms added
    assert not fidelity.assess(quiet(emulators={"bottleneck": slight}))["faithful"]  # loss-based: 0.5 ms
    assert fidelity.assess(quiet(emulators={"bottleneck": slight}, paths=[FAST_PATH]))["faithful"]  # 0.6 ms
    heavier = stats(p50=150, p99=350)  # 0.65 ms added
    assert not fidelity.assess(quiet(emulators={"bottleneck": heavier}, paths=[FAST_PATH]))["faithful"]
    long_rtt = fidelity.PathInfo("f1", LOSS_PATH.crossings, 180.0)  # 1% of 180 ms = 1.8 ms
    assert fidelity.assess(quiet(emulators={"bottleneck": heavier}, paths=[long_rtt]))["faithful"]


def test_a_gap_limit_grows_with_a_slow_sample_rate_and_links_not_crossed_are_not_counted() -> None:
    assert fidelity.assess(quiet(sample_gaps_s={"f1": 1.5}, sample_interval_s=0.2))["faithful"]  # limit 2 s
    spare = quiet(emulators={"bottleneck": stats(), "spare": stats(drops_ab=99)})
    assert fidelity.assess(spare)["faithful"]


def test_headline_for_faithful_unfaithful_and_not_assessed() -> None:
    assert fidelity.headline(judged(quiet())) == \
        "fidelity: faithful (emulation delay ≤ 0.12 ms on every path, no socket drops)"
    line = fidelity.headline(judged(quiet(machine_busy=0.99, emulator_cores={"bottleneck": 0.95})))
    assert line.startswith("fidelity: NOT FAITHFUL — ") and "0.95 of a core" in line and "99% busy" in line
    assert line.endswith(f"To fix: {fidelity.ADVICE}.")
    assert fidelity.headline(None) == "fidelity: not assessed (run made before fidelity verdicts)"


def test_cpu_times_busy_fraction_and_sample_gaps() -> None:
    # user nice system idle iowait irq softirq steal guest guest_nice
    before = fidelity.cpu_times("cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n")
    after = fidelity.cpu_times("cpu  250 0 100 950 100 0 0 0 0 0\n")
    assert before == (150, 1000) and after == (350, 1400)
    assert fidelity.busy_fraction(before, after) == 0.5
    assert fidelity.busy_fraction(after, after) is None
    steal0 = fidelity.steal_times("cpu  100 0 50 800 50 0 0 10 0 0\n")
    steal1 = fidelity.steal_times("cpu  250 0 100 950 100 0 0 30 0 0\n")
    assert steal0 == (10, 1010) and fidelity.busy_fraction(steal0, steal1) == pytest.approx(20 / 420)
    gaps = fidelity.sample_gaps({"f1": [0.3, 0.0, 0.1, 1.5], "f2": [2.0], "f3": []})
    assert gaps == {"f1": pytest.approx(1.2), "f2": 0.0, "f3": 0.0}


# --- how the verdict is shown ----------------------------------------------------------------------

UNFAITHFUL = judged(quiet(emulators={"bottleneck": stats(drops_ab=12)}, machine_busy=0.99))


def test_view_states_flags_and_first_reason() -> None:
    from fastlab.base.record import Summary, headline

    faithful = judged(quiet())
    assert fidelity_view.state(faithful) == "faithful" and fidelity_view.state(UNFAITHFUL) == "unfaithful"
    assert fidelity_view.state(None) == "unassessed"
    assert headline(Summary(fidelity=faithful)).run("faithful").value == 1
    assert headline(Summary(fidelity=UNFAITHFUL)).run("faithful").value == 0
    assert headline(Summary()).run("faithful").value is None and fidelity_view.verdict_of(None) is None
    assert fidelity_view.first_reason(UNFAITHFUL) == UNFAITHFUL.reasons[0]
    assert fidelity_view.first_reason(faithful) is None
    rows = fidelity_view.link_rows(UNFAITHFUL)
    assert [(r.link, r.direction, r.sock_drops, r.drops_over) for r in rows] == [
        ("bottleneck", "forward", 12, True), ("bottleneck", "reverse", 0, False)]


def test_banner_escapes_the_reasons() -> None:
    hostile = UNFAITHFUL.model_copy(deep=True)
    hostile.reasons = ["<script>alert(1)</script> & more"]
    page = fidelity_view.banner_html(hostile)
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt; &amp; more" in page


ENVIRONMENT = {"run": {"name": "demo", "prefix": "flabcd", "started": "2026-11-24T03:00:00+00:00"},
               "kernel": "6.18", "backends": {}, "shaping": [], "tools": {}}


def render(fid: Verdict | None) -> str:
    summary = read_summary({"flows": [], "links": [], "jain_index": 1.0})
    summary.fidelity = fid
    empty = pd.DataFrame()
    return report.render("name: demo\n", summary, read_environment(ENVIRONMENT), empty, empty, empty)


def test_report_warns_with_the_reasons_and_advice_when_not_faithful() -> None:
    page = render(UNFAITHFUL)
    top = page[:page.index("<h2>Flows</h2>")]
    assert 'data-fidelity="unfaithful"' in top and "Not faithful" in top
    for reason in UNFAITHFUL.reasons:
        assert fidelity_view.html.escape(reason) in top, reason
    assert "socket dropped 12 frames" in top and "99% busy" in top
    assert "What to do:" in top and "fastlab doctor --self-test" in top
    # the measurements: the path's delay against its budget, the link's lateness and drops (marked over)
    assert "Emulation fidelity" in top and "<td class=\"num over\">12</td>" in top and "0.12" in top
    assert "<script src=" not in page and "<link " not in page  # offline: nothing fetched from elsewhere


def test_report_notes_a_faithful_run_and_an_old_one() -> None:
    page = render(judged(quiet()))
    assert 'data-fidelity="faithful"' in page and "Faithful emulation" in page and "Not faithful" not in page
    assert "0.12 ms" in page
    old = render(None)
    assert 'data-fidelity="unassessed"' in old and "not assessed" in old and "Emulation fidelity" not in old


def test_results_room_names_what_is_wrong(tmp_path, monkeypatch) -> None:
    """The run folder's check before a run (fastlab.base.rundir): a path under a file, too little free space,
    and enough."""
    import shutil
    from collections import namedtuple

    from fastlab.base.rundir import RunFolder, expected_bytes

    need = expected_bytes(200, 600, 10, 1)
    # 10 flows + 2 link directions, 400 B a row; each flow at each direction (hop_flows.csv), 80 B a row
    assert need == 6 * 1024**2 + 200 * 600 * 12 * 400 + 200 * 600 * 10 * 2 * 80
    (tmp_path / "file").write_text("x")
    assert "is not a folder" in RunFolder(tmp_path / "file" / "run").room(need)
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda _p: usage(10**9, 10**9 - 10**6, 10**6))
    assert "1.0 MB free" in RunFolder(tmp_path / "new" / "run").room(need)
    monkeypatch.setattr(shutil, "disk_usage", lambda _p: usage(10**12, 0, 10**11))
    assert RunFolder(tmp_path / "new" / "run").room(need) is None


def test_a_run_folder_is_named_created_and_finished_by_its_owner(tmp_path) -> None:
    """Naming (<time>-<name>-<prefix> under the results root, or the folder asked for), creation,
    finishing (files, report, permissions) and a folder whose writing failed renamed .incomplete."""
    import re

    from fastlab.base.record import Environment, Summary
    from fastlab.base.rundir import INCOMPLETE, RunFolder, RunFolderError

    folder = RunFolder.named("demo", "flabcd", root=tmp_path)
    assert re.fullmatch(r"\d{8}-\d{6}-demo-flabcd", folder.directory.name) and folder.directory.parent == tmp_path
    assert RunFolder.named("demo", "flabcd", out=tmp_path / "mine").directory == tmp_path / "mine"
    folder.create()
    folder.finish(lambda: "<html></html>", spec_yaml="name: demo\n", environment=Environment(), summary=Summary())
    assert folder.is_run() and folder.has("report.html") and (folder.directory.stat().st_mode & 0o777) == 0o755

    def broken() -> str:
        raise OSError(28, "No space left on device")

    full = RunFolder(tmp_path / "full")
    full.create()
    with pytest.raises(RunFolderError, match="No space left on device; what was written is in .*full.incomplete"):
        full.finish(broken, spec_yaml="name: demo\n", environment=Environment(), summary=Summary())
    assert (tmp_path / f"full{INCOMPLETE}" / "summary.json").is_file() and not full.directory.exists()
    (tmp_path / "file").write_text("x")
    with pytest.raises(RunFolderError, match="cannot create the results folder"):
        RunFolder(tmp_path / "file" / "run").create()


def test_report_tables_speak_words_and_keep_the_keys() -> None:
    """report.html's headers are words with units (the summary.json key as each one's tooltip); numbers
    have 4 significant digits, utilization is a percentage, a missing value is '-'."""
    summary: dict[str, Any] = {
        "flows": [{"id": "f1", "src": "h1", "dst": "h2", "cc": "fast", "throughput_mbps": 623.0048,
                   "mean_rtt_ms": 181.4132, "min_rtt_ms": None, "future_metric": 7}],
        "links": [{"id": "bottleneck", "capacity_mbps": 10000.0, "utilization": 0.98765,
                   "mean_backlog_pkts": 12.34567, "reverse": {"utilization": 0.1}}], "jain_index": 1.0}
    empty = pd.DataFrame()
    page = report.render("name: demo\n", read_summary(summary), read_environment(ENVIRONMENT), empty, empty, empty)
    assert '<th title="throughput_mbps">goodput (Mb/s)</th>' in page
    num = '<td class="num">'  # numbers are right-aligned, words not
    assert '<th title="utilization">busy (%)</th>' in page and f"{num}98.8</td>" in page
    assert f"{num}623</td>" in page and f"{num}181.4</td>" in page and f"{num}12.35</td>" in page
    assert f"{num}-</td>" in page  # min RTT unknown (a numeric column)
    assert "<td>fast</td>" in page  # the algorithm: a word
    assert f"{num}10000</td>" in page and '<th title="id">link</th>' in page and '<th title="id">flow</th>' in page
    assert '<th title="future_metric">future_metric</th>' in page  # never hidden
    assert "reverse" not in page.split("<h2>Links</h2>")[1].split("</table>")[0]  # nested: not a column
    assert page.index("<h2>Flows</h2>") < page.index("<h2>Traces</h2>") and "<h2>Backends</h2>" not in page  # none


def test_report_escapes_everything_it_did_not_build() -> None:
    """The template autoescapes: a run name, a spec, a flow's field and a tool's version are text."""
    env = copy.deepcopy(ENVIRONMENT)
    env["run"]["name"] = "<script>alert(1)</script>"
    env["tools"] = {"iperf3": "</pre><img src=x onerror=alert(2)>"}
    summary: dict[str, Any] = {"flows": [{"id": "f1", "cc": "<i>fast</i>"}], "links": [], "jain_index": 1.0}
    empty = pd.DataFrame()
    page = report.render("name: '<b>x</b>'\n", read_summary(summary), read_environment(env), empty, empty, empty)
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<img src=x" not in page and "<b>x</b>" not in page and "<i>fast</i>" not in page


def test_the_reports_charts_are_fed_the_live_pages_samples() -> None:
    """report.html draws with the live page's code (templates/charts.js): its data are the run's rows as
    the samples the live page is streamed, in time order, with the columns the charts read; NaN and
    infinities become null, events the charts do not draw are left out, and nothing in the data can end
    the <script> that holds it."""
    from fastlab.results.chart_data import chart_samples, script_json

    flows = pd.DataFrame({"flow": ["f1", "f2"], "t": [0.1, 0.05], "goodput_mbps": [1.5, float("nan")],
                          "cwnd_pkts": [10, 12], "srtt_ms": [40.0, float("inf")], "bytes_acked": [1, 2]})
    links = pd.DataFrame({"t": [-0.5, float("nan")], "link": "bottleneck", "direction": "forward",
                          "backlog_pkts": [3, 4], "tx_bytes": [1000, 2000], "late_p99_us": [1, 2]})
    events = pd.DataFrame({"t": [0.2, 0.3, 0.4], "flow": "f1", "event": ["init", "update", "reroute"],
                           "target": [0, 30, None], "path": [None, None, "</script><script>alert(1)"]})
    samples = chart_samples(flows, links, events)
    assert [(s["kind"], s["t"]) for s in samples] == [("link", -0.5), ("flow", 0.05), ("flow", 0.1), ("event", 0.3),
                                                      ("event", 0.4)]
    assert samples[1] == {"kind": "flow", "t": 0.05, "flow": "f2", "goodput_mbps": None, "cwnd_pkts": 12,
                          "srtt_ms": None}
    assert samples[0] == {"kind": "link", "t": -0.5, "link": "bottleneck", "direction": "forward", "backlog_pkts": 3,
                          "tx_bytes": 1000}
    text = str(script_json(samples))
    assert "</script" not in text and "<" not in text and json.loads(text) == samples
    assert chart_samples(pd.DataFrame(), pd.DataFrame(), pd.DataFrame()) == []


def test_steal_is_reported_beside_the_verdict_not_judged() -> None:
    """A hypervisor's steal explains late departures; the verdict judges the lateness itself."""
    noisy = fidelity.assess(quiet(machine_steal=0.034))
    assert noisy["faithful"] and noisy["machine_steal"] == 0.034
    assert "hypervisor ran other work for 3.4%" in fidelity_view.details_html(Verdict.model_validate(noisy))
    assert "hypervisor" not in fidelity_view.details_html(judged(quiet(machine_steal=0.001)))
    assert fidelity.assess(quiet())["machine_steal"] is None


def test_a_tc_queue_is_judged_by_the_rate_it_delivered_while_packets_stayed_queued() -> None:
    """HTB in a software-emulated VM sent 0.86-0.93 of its rate with 9-65 packets queued throughout:
    a slower link than the one asked for. Only intervals with a queue at both ends count, and only
    a second or more of them."""
    full = fidelity.tc_busy_share(tc_samples(1.0), 10_000_000)
    assert full == {"busy_s": 3.0, "delivered_share": 1.0}
    assert fidelity.tc_busy_share(tc_samples(0.88), 10_000_000)["delivered_share"] == 0.88
    # the queue emptied: those intervals idle the link for the traffic's reason, so they do not count
    emptied = [(t, 0 if 1.0 <= t <= 2.0 else q, b * (0.5 if t > 1.0 else 1)) for t, q, b in tc_samples(1.0)]
    assert fidelity.tc_busy_share(emptied, 10_000_000)["busy_s"] < 2.0
    assert fidelity.tc_busy_share(tc_samples(0.5, seconds=0.9), 10_000_000) == {"busy_s": 0.9,
                                                                                "delivered_share": None}
    assert fidelity.tc_busy_share(tc_samples(0.5, backlog=1), 10_000_000)["delivered_share"] is None
    verdict = fidelity.assess(quiet(tc_links=("access",),
                                    tc_queues={"access": {"forward": (10_000_000, tc_samples(0.97)),
                                                          "reverse": (10_000_000, tc_samples(0.5, seconds=0.5))}}))
    assert verdict["faithful"] is True, verdict["reasons"]
    assert verdict["tc_queues"]["access"] == {"forward": {"busy_s": 3.0, "delivered_share": 0.97},
                                              "reverse": {"busy_s": 0.5, "delivered_share": None}}
    [unmeasured] = verdict["unmeasured"]
    assert unmeasured.startswith("access: shaped by tc (departure times are the kernel's, not measured; the rate it "
                                 "delivered while queued is; its queue is known from backlog samples 50 ms apart")
    details = fidelity_view.details_html(Verdict.model_validate(verdict))
    assert "rate tc delivered while packets were queued: access forward 97% over 3.0 s (limit 95%)" in details


# --- conservation: what reaches a link cannot exceed what its feeders deliver (hand-computed timelines) ---
CERN, CORE, SUNNY = ("cern", "forward"), ("core", "forward"), ("sunny", "reverse")
RATE_20, RATE_200 = 20_000_000, 200_000_000
STEP_S = 0.05


def steady(rate_bps: int, burst_at: float | None = None, burst_bytes: float = 0.0, late_us: float = 0.0,
           backlog: float = 0.0, paced: bool = True, fed_bps: int = RATE_20) -> fidelity.Counters:
    """Counters of a link direction of `rate_bps` fed at exactly `fed_bps` (CERN's 20 Mb/s) for 5 s, sampled
    every 50 ms; at `burst_at`, `burst_bytes` more arrive at once (and stay queued)."""
    times = tuple(round(i * STEP_S, 3) for i in range(101))
    extra = [burst_bytes if burst_at is not None and t >= burst_at else 0.0 for t in times]
    arrived = tuple(fed_bps / 8 * t + e for t, e in zip(times, extra, strict=True))
    queued = tuple(backlog + e for e in extra)
    return fidelity.Counters(rate_bps, times, arrived, queued, late_us, paced)


def test_feeders_are_the_slowest_upstream_crossing_and_those_between() -> None:
    routes = ((CERN, CORE, SUNNY),)
    fed = fidelity.feeders(routes, {CERN: RATE_20, CORE: RATE_200, SUNNY: RATE_20})
    assert fed[CERN] is None  # a host feeds the first hop: no bound
    assert fed[CORE] == ({CERN}, set())
    assert fed[SUNNY] == ({CERN}, {CORE})
    # of two equally slow crossings the nearer one: nothing between
    assert fidelity.feeders(routes, {CERN: RATE_20, CORE: RATE_20, SUNNY: RATE_20})[SUNNY] == ({CORE}, set())
    # a second route reaching CORE from a host leaves it unbounded
    rates = {CERN: RATE_20, CORE: RATE_200, SUNNY: RATE_20}
    assert fidelity.feeders(((CERN, CORE), (CORE, SUNNY)), rates)[CORE] is None


def test_a_burst_beyond_the_feeders_rate_is_measured_to_the_byte() -> None:
    """83 full packets (124.5 kB) reach Sunnyvale's 20 Mb/s link at once, fed by CERN's 20 Mb/s link: the
    excess is the burst less the slack (two MTUs) and the 1 % rate drift of one 50-ms sample."""
    excess, at = fidelity.burst_excess(steady(RATE_20, 2.5, 124_500), RATE_20, slack_bytes=3000)
    assert at == 2.5 and excess == pytest.approx(124_500 - 0.01 * RATE_20 / 8 * STEP_S - 3000)
    assert fidelity.burst_excess(steady(RATE_20), RATE_20, slack_bytes=3000) == (0.0, None)


def test_conservation_judges_a_burst_and_not_a_steady_or_unpaced_link() -> None:
    routes = ((CERN, CORE, SUNNY),)
    counters = {CERN: steady(RATE_20, late_us=100), CORE: steady(RATE_200, backlog=1500),
                SUNNY: steady(RATE_20, 2.5, 124_500)}
    figs = fidelity.conservation(routes, counters)
    # slack: 2 MTUs + CORE's largest backlog + each feeder's p99 lateness at its rate
    slack = 2 * 1500 + 1500 + RATE_20 / 8 * 100e-6 + RATE_20 / 8 * 0
    assert figs[SUNNY]["slack_bytes"] == round(slack) and figs[SUNNY]["fed_by"] == ["cern (forward)"]
    assert figs[SUNNY]["excess_bytes"] == round(124_500 - 0.01 * RATE_20 / 8 * STEP_S - slack)
    assert figs[SUNNY]["excess_ms"] == pytest.approx(figs[SUNNY]["excess_bytes"] * 8 / RATE_20 * 1000, abs=0.01)
    assert figs[CORE]["excess_bytes"] == 0 and CERN not in figs
    unpaced = {**counters, CORE: steady(RATE_200, backlog=1500, paced=False)}  # a policer between
    assert fidelity.conservation(routes, unpaced) == {}  # neither CORE nor what it feeds is judged


def test_a_burst_above_the_budget_makes_the_run_unfaithful_and_a_small_one_does_not() -> None:
    path = fidelity.PathInfo("f1", (CERN, CORE, SUNNY), 180.0, fast_target_ms(10, 20))  # budget 1.5 ms
    base = fidelity.Inputs(emulators={}, paths=[path], routes=((CERN, CORE, SUNNY),))
    burst = copy.copy(base)
    burst.counters = {CERN: steady(RATE_20), CORE: steady(RATE_200), SUNNY: steady(RATE_20, 2.5, 124_500)}
    verdict = fidelity.assess(burst)
    assert not verdict["faithful"] and len(verdict["reasons"]) == 1, verdict["reasons"]
    assert re.match(r"sunny \(reverse\): 120\.2 kB more reached it by 2\.5 s than cern \(forward\) could deliver "
                    r"\(48\.1 ms of queue, above 1\.50 ms\): packets held and released together", verdict["reasons"][0])
    small = copy.copy(base)  # 3 packets: above the budget (1.8 ms) but within the counters' noise (4 MTUs)
    small.counters = {CERN: steady(RATE_20), CORE: steady(RATE_200), SUNNY: steady(RATE_20, 2.5, 3 * 1500 + 3250)}
    assert fidelity.assess(small)["faithful"]
    assert fidelity.assess(small)["conservation"]["sunny (reverse)"]["budget_ms"] == 1.5


def test_report_draws_what_the_live_page_draws() -> None:
    """report.html holds the live page's chart block (templates/charts.html: the theory's note, goodput's
    smoothing, a div per chart, FAST's for a FAST run) and the data its charts are drawn from: the theory's
    lines (Σα 30 then 60 after a change at 6.4 s), the marker at the change, the duration and the samples.
    That the two pages then draw the same is tested in the browser (tests/webapp/test_charts.py)."""
    from fastlab.define.schema import parse_spec, to_plain
    from fastlab.theory import segments

    spec = parse_spec({"name": "x", "topology": "dumbbell", "topology_args": {"rate_mbps": 20, "rtt_ms": 40},
                       "duration_s": 20, "flows": [{"src": "h1", "dst": "h2", "cc": "fast", "cc_args": {"alpha": 30}}]})
    change = segments.Change(6.4, "fast", {"alpha": 60}, "h1", live=True)
    refs = segments.reference_spans(spec, [change])
    t = [i / 10 for i in range(-20, 201)]
    flows = pd.DataFrame({"flow": "f1", "t": t, "goodput_mbps": 20.0, "cwnd_pkts": 50.0, "srtt_ms": 60.0})
    env = dict(ENVIRONMENT) | {"congestion_control": {"applied": [
        {"at_s": 6.4, "host": "h1", "cc": "fast", "args": {"alpha": 60}, "live": True}]}}
    page = report.render(yaml.safe_dump(to_plain(spec)), read_summary({"flows": [], "links": [], "jain_index": 1.0}),
                         read_environment(env), flows, pd.DataFrame(), pd.DataFrame(), refs, 20)
    for chart in ("goodput", "links", "cwnd", "rtt", "queue", "fast-window", "fast-rtt"):
        assert f'<div class="chart" id="chart-{chart}"></div>' in page, chart
    assert 'id="chart-ports"' not in page and '<select id="smooth">' in page and 'id="theory-note"' in page
    data = json.loads(re.search(r'<script type="application/json" id="run-data">(.*?)</script>', page, re.S)[1])
    assert data["duration"] == 20 and data["sampleHz"] == 20 and len(data["samples"]) == len(t)
    assert data["marks"] == [{"at_s": 6.4, "text": "h1: α 30 → 60", "live": True}]
    spans = sorted((line["from_s"], line["to_s"], line["y"]) for line in data["lines"]["queue"])
    assert spans == [(0.0, 6.4, 30), (6.4, 20.0, 60)], spans
    assert "export function createCharts(" in page and "runCharts.onSamples(data.samples)" in page


def test_an_unfaithful_verdict_names_the_runs_that_shared_the_machine() -> None:
    from fastlab.measure.verdict import note_neighbours

    neighbours = [{"prefix": "flaaaa", "run": "20261127-lab02-a", "first_s": 0.0, "last_s": 9.0}]
    bad = note_neighbours({"faithful": False, "reasons": ["the machine was 97% busy"]}, neighbours)
    assert bad["neighbours"] == ["flaaaa"] and bad["reasons"][0] == "the machine was 97% busy"
    assert "1 other run shared the machine while these flows ran (20261127-lab02-a)" in bad["reasons"][1]
    good = note_neighbours({"faithful": True, "reasons": []}, neighbours)
    assert good["reasons"] == [] and good["neighbours"] == ["flaaaa"]  # faithful beside them: no excuse needed
    alone = note_neighbours({"faithful": False, "reasons": ["late"]}, [])
    assert alone["reasons"] == ["late"] and alone["neighbours"] == []


def test_a_windows_mean_lateness_from_the_cumulative_counts() -> None:
    """linkemu reports lateness cumulatively (n segments, their mean): a window's mean is the difference of
    the sums at its first and last samples. 100 segments at 50 us, then 100 more at 450 us: 250 us over the
    whole run, 450 us over its second half; nothing to say before the columns existed or with no segment."""
    rows = pd.DataFrame({"t": [0.0, 1.0, 2.0], "late_n": [0, 100, 200], "late_mean_us": [0.0, 50.0, 250.0]})
    assert fidelity.window_mean_us(rows, 0.0, 3.0) == pytest.approx(250.0)
    assert fidelity.window_mean_us(rows, 1.0, 3.0) == pytest.approx(450.0)
    assert fidelity.window_mean_us(rows, 0.0, 1.5) == pytest.approx(50.0)
    assert fidelity.window_mean_us(rows, 1.5, 3.0) is None  # one sample: no difference to take
    assert fidelity.window_mean_us(rows.drop(columns=["late_n"]), 0.0, 3.0) is None
    assert fidelity.window_mean_us(rows.assign(late_n=[5, 5, 5]), 0.0, 3.0) is None
    assert fidelity.window_mean_us(rows, 0.0, 3.0, figure="rx_wait") is None
