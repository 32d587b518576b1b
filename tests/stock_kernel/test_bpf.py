"""fastlab's BPF build on a stock kernel (Debian's): FAST and HSTCP register as struct_ops with their
event rings -- the shared one and a hash of per-reader ring buffers by namespace inode, which needs
Linux >= 5.8 -- an events reader of a namespace reads a ring of its own, and a short FAST run keeps its
flow's updates through it; nothing stays registered (the lane's end-state check)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pandas as pd

from fastlab.base import paths
from fastlab.define.cc import kernel_available
from fastlab.define.schema import parse_spec
from fastlab.experiment.engine import run_experiment
from fastlab.plan.capabilities import Capabilities
from fastlab.run.ccload import run_tool
from tests.stock_kernel.conftest import dumbbell

UNSHARE_WAIT_S = 10.0  # `unshare --net` enters its namespace within milliseconds, slower under TCG


def test_bpf_builds_load_and_each_reader_reads_its_own_ring(lane_out: Path, caps: Capabilities) -> None:
    assert caps.has("bpf_struct_ops"), caps.probes
    holder = subprocess.Popen(["unshare", "--net", "sleep", "120"])
    try:
        deadline = time.monotonic() + UNSHARE_WAIT_S
        while (ino := os.stat(f"/proc/{holder.pid}/ns/net").st_ino) == os.stat("/proc/self/ns/net").st_ino:
            assert time.monotonic() < deadline, "unshare never entered a new namespace"
            time.sleep(0.05)
        for name in ("fast", "hstcp"):
            assert run_tool("register", name)["status"] == "registered"
            try:
                reader = subprocess.run([str(paths.cc_tool()), "events", name, "--netns", str(ino),
                                         "--duration-s", "0.5"], capture_output=True, text=True, timeout=60,
                                        check=False)
                assert reader.returncode == 0, reader.stderr
                first = json.loads(reader.stdout.splitlines()[0])
                assert first == {"cmd": "events", "name": name, "ring": "own", "netns": [ino]}, first
            finally:
                run_tool("unregister", name)
    finally:
        holder.kill()
        holder.wait()

    spec = parse_spec(dumbbell("bpf-fast", 4, [{"src": "h1", "dst": "h2", "cc": "fast", "cc_args": {"alpha": 10}}],
                               cc_impl="bpf"))
    out = run_experiment(spec, out=lane_out / "bpf-fast", caps=caps).directory
    applied = json.loads((out / "environment.json").read_text())["congestion_control"]["applied"]
    assert next(a for a in applied if "events" in a) == {"cc": "fast", "events": "own ring", "foreign_events": 0}
    updates = pd.read_csv(out / "cc_events.csv").query("event == 'update'")
    # an update a round (40-60 ms here) for ~4 s: ~70; TCG's slowness may stretch rounds, not skip events
    assert len(updates) >= 20 and set(updates["flow"]) == {"f1"}, len(updates)
    assert "fast" not in kernel_available() and "hstcp" not in kernel_available()
