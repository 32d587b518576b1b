"""RED through tc (the kernel's sch_red) and through linkemu on the same experiment, side by side in the
same guest (issue 33): what CI asserts here are the invariants of RED doing its job on both; how closely
the two agree on drop rate and time-mean queue (the issue's 20 %) is a pass rate, measured by
`bench/red_lane.py` over repeated lanes, because one pair of runs of a few hundred drops each cannot
carry a 20 % band at four standard deviations (docs/design.md §10).

"The same experiment" means the same RED as both see it:
- thresholds of 10 and 30 full-sized packets: linkemu counts packets, the kernel bytes (IP bytes through
  the HTB root's size table), so tc gets 15,000 and 45,000 B; the flows' data packets are all 1500 B;
- the same weight: the kernel's is a power of two, so the spec gives wq = 2^-9 (0.00195, next to Floyd's
  0.002), which tc reaches exactly (burst 72, `tc_aqm.tc_red`), and linkemu takes as written;
- gentle off (sch_red has no gentle mode), no ECN, mean_pkt_bytes 1500 for both idle decays, the same
  66-packet buffer (99,000 B for tc);
- the same link as the flows met it: in this software-emulated guest tc's HTB delivers less than its
  rate while packets wait (its watchdog softirq runs late and one 2-packet burst cannot make the time
  up; test_netem measured 0.86-0.93 of 10 Mb/s, and 0.38 on a host busy with other work, 2026-11-27),
  and the drop rate TCP settles at depends on its window, so on the rate (Reno's p ~ 1.5/w^2: 10 % less
  rate is ~20 % more drops). So the link is 5 Mb/s, where the same burst covers 4.8 ms of lateness
  instead of 2.4; the tc run goes first, the fidelity verdict measures the share it delivered while
  busy, and linkemu's link gets that rate.

Eight Reno flows over 5 Mb/s x 100 ms (BDP 42 packets): each window ~7 packets with RED's queue, a
loss rate near 3 %, RED's average settling between its thresholds. 100 ms rather than 40: the verdict
allows the emulator 1 % of the RTT of lateness, and under TCG linkemu's departures ran ~0.8 ms late on this
host beside other work (2026-11-27: 0.79 ms, over 40 ms's 0.5-ms allowance). 15 s of flows per backend in CI, the
first 6 s (slow start, RED's average catching up: 1/wq = 512 packets is 1.2 s at 417 packets/s) left out: ~11 RED
drops a second measured (211 in 19 s, CI 2026-11-29), so ~100 in the 9-s window against the 50 asserted. The
bench's pairs, which carry the 20 % agreement, run 25 s each (FASTLAB_LANE_RED_S; 150-250 drops a run): each
second of flows here costs a second of CI, and the lane's slowest part is already each run's build and teardown
(~15-25 s a run under TCG). Each pair's figures are appended to `red-lane.jsonl` in the lane's output folder,
which the bench reads; FASTLAB_LANE_REPEATS (default 1) runs that many pairs in one boot."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from fastlab.define.schema import parse_spec
from fastlab.experiment.engine import run_experiment
from fastlab.plan.capabilities import Capabilities
from tests.stock_kernel.conftest import backlog_mean, dumbbell, flow_rows

MIN_TH, MAX_TH = 10, 30  # packets
RED: dict[str, object] = {"model": "red", "min_th": MIN_TH, "max_th": MAX_TH, "max_p": 0.1, "wq": 2**-9,
                          "gentle": False, "mean_pkt_bytes": 1500}
RATE_MBPS = 5.0
DURATION_S = int(os.environ.get("FASTLAB_LANE_RED_S") or "15")  # seconds of flows per backend (docstring)
FLOWS = 8
RTT_MS = 100
STEADY_FROM_S = 6  # seconds of the flows left out
REPEATS = int(os.environ.get("FASTLAB_LANE_REPEATS", "1"))
FIGURES_FILE = "red-lane.jsonl"


def window_counts(out: Path, t0: float, t1: float) -> dict[str, float]:
    """The forward bottleneck's packets between t0 and t1 s of flow f1: arrivals (sent + every drop +
    what the backlog grew by, counted the same way for both backends), RED's drops, tail drops."""
    links = pd.read_csv(out / "links.csv")
    start = flow_rows(out)["t"].iloc[0]
    rows = links[(links["link"] == "bottleneck") & (links["direction"] == "forward")].sort_values("t")
    rows = rows[(rows["t"] - start >= t0) & (rows["t"] - start <= t1)]
    first, last = rows.iloc[0], rows.iloc[-1]
    delta = {c: float(last[c] - first[c]) for c in ("tx_pkts", "queue_drops", "aqm_drops", "backlog_pkts")}
    arrivals = delta["tx_pkts"] + delta["queue_drops"] + delta["aqm_drops"] + delta["backlog_pkts"]
    return {"arrivals": arrivals, "aqm_drops": delta["aqm_drops"], "tail_drops": delta["queue_drops"],
            "span_s": float(last["t"] - first["t"])}


def run_red(backend: str, rate_mbps: float, out: Path, caps: Capabilities) -> dict[str, Any]:
    """One run of the experiment through one backend: its figures over the steady window, and for tc
    the RED the kernel was given (checked against the spec: the same RED, exactly)."""
    spec = dumbbell(out.name, DURATION_S, [{"src": "h1", "dst": "h2", "cc": "reno", "count": FLOWS}],
                    topology_args={"rate_mbps": rate_mbps, "rtt_ms": RTT_MS, "buffer_bdp": 2.0},
                    links={"bottleneck": {"backend": backend, "aqm": RED, "buffer": 66}})
    result = run_experiment(parse_spec(spec), out=out, caps=caps)
    shaping = {s.link: s.dump() for s in result.environment.shaping}["bottleneck"]
    assert shaping["backend"] == backend, shaping
    if backend == "tc":
        got = shaping["resolved"]["forward"]["tc_aqm"]
        assert (got["wq"], got["min_bytes"], got["max_bytes"], got["limit_bytes"]) == (2**-9, 15000, 45000, 99000)
        assert any("red" in c and "1:1" in c for c in shaping["commands"]), shaping["commands"]
    counts = window_counts(result.directory, STEADY_FROM_S, DURATION_S)
    verdict = result.summary.fidelity
    assert verdict is not None
    queued = verdict.tc_queues.get("bottleneck", {}).get("forward")
    share = queued.delivered_share if queued is not None else None
    return {**counts, "rate_mbps": rate_mbps, "tc_share": share,
            "drop_rate": counts["aqm_drops"] / max(counts["arrivals"], 1.0),
            "mean_queue_pkts": backlog_mean(result.directory, STEADY_FROM_S, DURATION_S),
            "faithful": verdict.faithful, "reasons": verdict.reasons}


@pytest.mark.parametrize("repeat", range(REPEATS))
def test_tc_red_and_linkemu_red_both_do_reds_job(lane_out: Path, caps: Capabilities, repeat: int) -> None:
    if not caps.has("sch_red"):
        pytest.fail(f"the stock kernel should have sch_red: {caps.probes['sch_red'].detail}")
    tc = run_red("tc", RATE_MBPS, lane_out / f"red-tc-{repeat}", caps)
    # linkemu gets the rate tc delivered while packets waited (None: too little busy time to say)
    emu_rate = round(RATE_MBPS * min(1.0, tc["tc_share"] or 1.0), 3)
    emu = run_red("emulator", emu_rate, lane_out / f"red-emulator-{repeat}", caps)
    pair = {"repeat": repeat, "tc": tc, "emulator": emu}
    with (lane_out / FIGURES_FILE).open("a") as f:
        f.write(json.dumps(pair) + "\n")
    print("tc RED vs linkemu RED:", pair)
    for name, fig in (("tc", tc), ("emulator", emu)):
        # RED did the dropping: early drops by the hundred (~3 % of ~8,000 arrivals expected, 50 is
        # far below any run seen), the 66-packet buffer overflowing rarely if at all
        assert fig["aqm_drops"] >= 50, (name, pair)
        assert fig["tail_drops"] <= 0.1 * fig["aqm_drops"], (name, pair)
        # and kept the real queue near its thresholds: RED's average lags the queue but cannot sit
        # far outside [min_th, max_th] while drops happen at a steady few percent
        assert 0.5 * MIN_TH <= fig["mean_queue_pkts"] <= 1.2 * MAX_TH, (name, pair)
