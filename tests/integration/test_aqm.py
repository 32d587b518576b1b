"""AQM in real runs (issue 33): RED, CoDel and PIE in the emulator on a real dumbbell with kernel TCP,
judged on invariants (docs/design.md §10): the AQM is carried out as the spec asks (linkemu's --ab-aqm, the
reverse direction without one), it drops early where four Reno flows overload a 50 Mb/s link, its
counters and state reach links.csv and summary.json, and its drops are counted apart from the full
queue's. How well each keeps the queue (RED's average between its thresholds, CoDel's sojourn near its
target) depends on timing and is for recorded runs and bench/."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import EXAMPLE, fastlab

pytestmark = pytest.mark.usefixtures("as_root")

AQMS = {
    "red": ("{model: red, min_th: 5, max_th: 15}", "red:min_th_pkts=5,max_th_pkts=15,max_p=0.1,wq=0.002,gentle=1,"
            "adaptive=0,mean_pkt_bytes=500,ecn=0", "aqm_avg_queue"),
    "codel": ("{model: codel}", "codel:target_us=5000,interval_us=100000,ecn=0", None),
    "pie": ("{model: pie}", "pie:target_us=15000,tupdate_us=15000,alpha=0.125,beta=1.25,max_burst_us=150000,ecn=0",
            "aqm_qdelay_ms"),
}


@pytest.mark.parametrize("model", sorted(AQMS))
def test_aqm_drops_early_and_is_counted_apart(tmp_path: Path, model: str) -> None:
    spec, argv_value, state_column = AQMS[model]
    out = tmp_path / model
    proc = fastlab("run", str(EXAMPLE), "--out", str(out), "--set", f"links.bottleneck.aqm={spec}",
                   "--set", "links.bottleneck.buffer=4bdp", "--set", "flows.0.count=4", "--set", "duration_s=4")
    assert proc.returncode == 0, proc.stderr
    env = json.loads((out / "environment.json").read_text())
    (shaped,) = [s for s in env["shaping"] if s["link"] == "bottleneck"]
    argv = shaped["emulator_argv"]
    assert shaped["backend"] == "emulator" and argv[argv.index("--ab-aqm") + 1] == argv_value
    assert "--ba-aqm" not in argv
    link = json.loads((out / "summary.json").read_text())["links"][0]
    assert link["aqm_drops"] > 0 and link["aqm_marks"] == 0, link  # no flow negotiated ECN
    assert link["drops"] == link["aqm_drops"] + link["queue_drops"] + link["loss_drops"]
    assert link["reverse"]["aqm_drops"] == 0
    rows = pd.read_csv(out / "links.csv")
    fwd = rows[(rows["link"] == "bottleneck") & (rows["direction"] == "forward")].sort_values("t")
    assert fwd["aqm_drops"].is_monotonic_increasing and int(fwd["aqm_drops"].max()) == link["aqm_drops"]
    if state_column:
        assert fwd[state_column].notna().any() and (fwd[state_column].dropna() >= 0).all()
    rev = rows[(rows["link"] == "bottleneck") & (rows["direction"] == "reverse")]
    assert rev["aqm_drops"].isna().all()  # the reverse has no AQM: no figures for it
