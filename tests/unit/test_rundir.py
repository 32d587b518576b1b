"""The one writer and reader of run folders (`fastlab.base.rundir.RunFolder`): what the engine writes is
what every reader gets back, a gzipped CSV reads like a plain one, and a missing file is named."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
import pytest

from fastlab.base.record import MAX_RECORD_CHARS, Environment, RecordError, Summary
from fastlab.base.rundir import ENVIRONMENT, EVENTS, FLOWS, REPORT, RTT_SAMPLES, SUMMARY, RunFolder


def test_what_is_written_reads_back_and_empty_parts_write_no_file(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path)
    flows = pd.DataFrame({"flow": ["f1", "f1"], "t": [0.1, 0.2], "cwnd_pkts": [10, 12]})
    folder.write(spec_yaml="name: x\ntopology: dumbbell\n",
                 environment=Environment.model_validate({"kernel": "6.18", "when": Path("/x")}),
                 summary=Summary.model_validate({"flows": [{"id": "f1"}]}), flows=flows,
                 links=pd.DataFrame({"link": [], "t": []}), events=pd.DataFrame(), rtt_samples=[])
    assert folder.is_run() and not folder.has(EVENTS) and not folder.has(RTT_SAMPLES) and not folder.has(REPORT)
    assert folder.spec() == {"name": "x", "topology": "dumbbell"}
    # the record as written: its version first, the fields given, a path as its text
    assert json.loads(folder.path(ENVIRONMENT).read_text()) == {"schema_version": 1, "kernel": "6.18", "when": "/x"}
    assert json.loads(folder.path(SUMMARY).read_text()) == {"schema_version": 1, "flows": [{"id": "f1"}]}
    assert folder.environment().kernel == "6.18" and folder.summary().flows[0].id == "f1"
    # a caller that replaces a field gets it back; the summary of a finished run rewritten whole
    summary = folder.summary()
    summary.jain_index = 0.5
    folder.replace_summary(summary)
    assert folder.summary().jain_index == 0.5 and [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    pd.testing.assert_frame_equal(folder.flows(), flows)
    folder.write_report("<html></html>")
    assert folder.path(REPORT).read_text() == "<html></html>"


def test_a_gzipped_csv_reads_like_a_plain_one_and_a_missing_file_is_named(tmp_path: Path) -> None:
    with gzip.open(tmp_path / f"{FLOWS}.gz", "wt") as f:
        f.write("flow,t\nf1,0.5\n")
    folder = RunFolder(tmp_path)
    assert folder.flows().to_dict("list") == {"flow": ["f1"], "t": [0.5]}
    assert not folder.is_run() and folder.environment(missing_ok=True) == Environment()
    with pytest.raises(FileNotFoundError, match=f"the run has no {SUMMARY}"):
        folder.summary()


def test_a_record_that_is_no_run_record_is_one_line_naming_the_folder_the_file_and_the_field(tmp_path: Path) -> None:
    (tmp_path / SUMMARY).write_text('{"flows": [{"id": "f1", "retransmits": "many"}]}')
    with pytest.raises(RecordError, match=rf"^{tmp_path.name}/summary.json: flows\[0\].retransmits: "):
        RunFolder(tmp_path).summary()
    (tmp_path / ENVIRONMENT).write_bytes(b" " * (4 * MAX_RECORD_CHARS + 10))  # read no further than the reader takes
    with pytest.raises(RecordError, match="environment.json: larger than 67,108,864 bytes"):
        RunFolder(tmp_path).environment()


def test_open_names_checks_and_creates_and_refuses_in_one_line(tmp_path: Path) -> None:
    """RunFolder.open: the engine's whole opening of a run's folder (named, room checked, created)."""
    from fastlab.base.rundir import RunFolderError

    folder = RunFolder.open("demo", "flabcd", tmp_path / "run", need_bytes=1)
    assert folder.directory == tmp_path / "run" and folder.directory.is_dir()
    (tmp_path / "file").write_text("x")
    with pytest.raises(RunFolderError, match="is not a folder"):
        RunFolder.open("demo", "flabcd", tmp_path / "file" / "run", need_bytes=1)
    with pytest.raises(RunFolderError, match="not enough free space"):
        RunFolder.open("demo", "flabcd", tmp_path / "big", need_bytes=10**18)
    assert not (tmp_path / "big").exists()  # refused before anything was made


def test_partial_samples_written_while_a_run_goes_read_back_a_cut_line_skipped(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path)
    assert not folder.has_partial()
    writer = folder.partial_writer()
    for n in range(5):
        writer.write({"kind": "flow", "t": n / 10, "when": Path("/x")})
    writer.close()
    writer.write({"kind": "flow", "t": 9.0})  # after close: dropped, no error (a late sample)
    with (tmp_path / "partial.jsonl").open("a") as fh:
        fh.write('[1, 2]\n{"kind": "flow", "t": 0.6')  # not a sample; a killed run's cut last line
    assert folder.has_partial()
    samples = list(folder.partial(limit=100))
    assert [s["t"] for s in samples] == [0.0, 0.1, 0.2, 0.3, 0.4] and samples[0]["when"] == "/x"
    assert len(list(folder.partial(limit=2))) == 2


# Files of a run folder named by a string literal outside fastlab/base/rundir.py, with why that is not reading
# or writing a run folder by hand. Everything else goes through RunFolder and rundir's names.
NOT_RUN_FOLDER_FILES = {
    ("fastlab/results/report.py", "report.html"): "the Jinja template the report is drawn from (fastlab/templates)",
    ("webapp/handout.py", "report.html"): "a handout's words (`report.html` in a lab's README) turned into a link",
}


def test_no_module_names_a_run_folders_files_but_rundir() -> None:
    """Issue 35: the engine, the web app, labs and benches wrote and read run folders' files by name; one
    owner (fastlab.base.rundir) now names them. A string literal equal to one of its file names (or ending in
    /name, as a zip member's f-string) anywhere else in the project's code fails here."""
    import ast

    from fastlab.base import rundir

    names = {rundir.SPEC, rundir.ENVIRONMENT, rundir.FLOWS, rundir.LINKS, rundir.EVENTS, rundir.RTT_SAMPLES,
             rundir.REPORT, rundir.SUMMARY, rundir.PARTIAL, rundir.POINT_FILE, rundir.SWEEP_STATE}
    root = Path(__file__).resolve().parents[2]
    found = set()
    for folder in ("fastlab", "webapp", "bench", "labs", "controllers", "topologies"):
        for path in (root / folder).rglob("*.py"):
            if path == root / "fastlab" / "base" / "rundir.py":
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    found |= {(str(path.relative_to(root)), n) for n in names
                              if node.value in (n, f"{n}.gz") or node.value.endswith(f"/{n}")}
    assert found == set(NOT_RUN_FOLDER_FILES), found
