"""Jumbo frames (spec `mtu`), in real runs: every interface carries 9000-byte packets through the
emulator's fast path and its per-packet path, TCP sizes its segments from it, and the link is used.
(The tc backend needs sch_netem, which this machine's kernel lacks: its jumbo-frame commands are
checked by the planner's unit test, test_jumbo_frames_hold_the_same_bytes_in_fewer_packets.)

50 Mb/s x 20 ms with a 1-BDP buffer is 14 jumbo packets of queue: small, but CUBIC still fills the
link (a BDP of buffer keeps a loss-based flow busy through its back-off); 4 s leaves ~3 s of
congestion avoidance after a slow start of under a second (> 0.7 of the link, judged on a faithful run)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from fastlab.define.schema import parse_spec
from fastlab.experiment.engine import run_experiment
from tests.conftest import faithful

pytestmark = pytest.mark.usefixtures("as_root")

JUMBO_MSS = 9000 - 20 - 20 - 12  # IPv4 and TCP headers, and the timestamps option


@pytest.mark.parametrize("backend, fast_path", [("emulator", "auto"), ("emulator", "off")])
def test_jumbo_frames_cross_every_backend(backend: str, fast_path: str, tmp_path: Path) -> None:
    spec = parse_spec({"name": f"jumbo-{backend}-{fast_path}", "topology": "dumbbell", "duration_s": 4, "seed": 1,
                       "topology_args": {"rate_mbps": 50, "rtt_ms": 20, "buffer_bdp": 1.0}, "switch": "bridge",
                       "mtu": 9000, "fast_path": fast_path, "links": {"bottleneck": {"backend": backend}},
                       "flows": [{"src": "h1", "dst": "h2", "cc": "cubic"}]})
    result = run_experiment(spec, out=tmp_path / "run")
    flows = pd.read_csv(tmp_path / "run" / "flows.csv")
    assert set(flows["mss_bytes"].dropna().astype(int)) == {JUMBO_MSS}
    if faithful(result.summary):  # a busy machine's sender can fall short of any rate: inconclusive
        assert (result.summary.flows[0].throughput_mbps or 0) > 0.7 * 50, result.summary.flows[0]
    forward = result.environment.shaping[0].resolved.forward
    assert forward.mtu_bytes == 9000 and forward.limit_pkts == 14  # 125 kB / 9000 B = 13.9
    assert any(cmd[-2:] == ["mtu", "9000"] for cmd in result.environment.network_commands)
