"""The one writer and reader of run folders (`fastlab.rundir.RunFolder`): what the engine writes is
what every reader gets back, a gzipped CSV reads like a plain one, and a missing file is named."""

from __future__ import annotations

import gzip
from pathlib import Path

import pandas as pd
import pytest

from fastlab.rundir import EVENTS, FLOWS, REPORT, RTT_SAMPLES, SUMMARY, RunFolder


def test_what_is_written_reads_back_and_empty_parts_write_no_file(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path)
    flows = pd.DataFrame({"flow": ["f1", "f1"], "t": [0.1, 0.2], "cwnd_pkts": [10, 12]})
    folder.write(spec_yaml="name: x\ntopology: dumbbell\n", environment={"kernel": "6.18", "when": Path("/x")},
                 summary={"flows": [{"id": "f1"}]}, flows=flows, links=pd.DataFrame({"link": [], "t": []}),
                 events=pd.DataFrame(), rtt_samples=[])
    assert folder.is_run() and not folder.has(EVENTS) and not folder.has(RTT_SAMPLES) and not folder.has(REPORT)
    assert folder.spec() == {"name": "x", "topology": "dumbbell"}
    assert folder.environment() == {"kernel": "6.18", "when": "/x"}  # written with default=str
    assert folder.summary() == {"flows": [{"id": "f1"}]}
    pd.testing.assert_frame_equal(folder.flows(), flows)
    folder.write_report("<html></html>")
    assert folder.path(REPORT).read_text() == "<html></html>"


def test_a_gzipped_csv_reads_like_a_plain_one_and_a_missing_file_is_named(tmp_path: Path) -> None:
    with gzip.open(tmp_path / f"{FLOWS}.gz", "wt") as f:
        f.write("flow,t\nf1,0.5\n")
    folder = RunFolder(tmp_path)
    assert folder.flows().to_dict("list") == {"flow": ["f1"], "t": [0.5]}
    assert not folder.is_run() and folder.environment(missing_ok=True) == {}
    with pytest.raises(FileNotFoundError, match=f"the run has no {SUMMARY}"):
        folder.summary()
