"""fastlab.bundle: export a run directory as a zip with a SHA-256 manifest, and verify it."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import pytest

from fastlab.bundle import MANIFEST, REPRODUCE, BundleError, export, extract, verify

SPEC = "name: demo\ntopology: dumbbell\nduration_s: 8\nseed: 3\nflows:\n- {src: h1, dst: h2, cc: fast}\n"
SUMMARY = {"flows": [{"id": "f1", "src": "h1", "dst": "h2", "cc": "fast", "throughput_mbps": 18.3, "min_rtt_ms": 20.9,
                      "mean_rtt_ms": 25.7, "retransmits": 9}],
           "links": [{"id": "bottleneck", "utilization": 0.93, "mean_backlog_pkts": 7.0, "drops": 9, "loss_drops": 9}],
           "jain_index": 1.0}
ENVIRONMENT = {"run": {"prefix": "flabcd", "host": "vm"}, "kernel": "6.18.0",
               "backends": {"delay": {"backend": "emulator", "why": "no sch_netem"}},
               "shaping": [{"link": "bottleneck", "backend": "emulator", "why": "loss must be seeded and repeatable"}],
               "congestion_control": {"builds": {"fast.bpf.o": "ab" * 32}}}


def make_run(tmp_path: Path) -> Path:
    run = tmp_path / "20261122-050000-demo-flabcd"
    (run / "sub").mkdir(parents=True)
    (run / "spec.yaml").write_text(SPEC)
    (run / "summary.json").write_text(json.dumps(SUMMARY))
    (run / "environment.json").write_text(json.dumps(ENVIRONMENT))
    (run / "flows.csv").write_text("t,flow,cwnd\n" + "".join(f"{i},f1,{i}\n" for i in range(2000)))
    (run / "sub" / "loss_drops_bottleneck.txt").write_text("ab 17\nab 42\n")
    return run


def test_export_lists_every_file_with_its_sha256_and_verifies(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    (run / ".scratch.tmp").write_text("an atomic write in progress")
    zip_path = export(run, tmp_path / "out" / "bundle.zip")
    with zipfile.ZipFile(zip_path) as zf:
        names = sorted(zf.namelist())
        manifest = zf.read(f"{run.name}/{MANIFEST}").decode()
        readme = zf.read(f"{run.name}/{REPRODUCE}").decode()
    assert names == sorted(f"{run.name}/{n}" for n in ("spec.yaml", "summary.json", "environment.json", "flows.csv",
                                                        "sub/loss_drops_bottleneck.txt", REPRODUCE, MANIFEST))
    digest = hashlib.sha256((run / "flows.csv").read_bytes()).hexdigest()
    assert f"{digest}  flows.csv" in manifest.splitlines()
    assert len(manifest.splitlines()) == len(names) - 1  # every file but the manifest itself
    # REPRODUCE.md says what ran, on which backends and CC build, and how to verify and replay it
    for fact in ("seed 3", "loss must be seeded", "ab" * 32, "fastlab bundle verify bundle.zip",
                 "fastlab bundle replay bundle.zip", "18.3 Mb/s"):
        assert fact in readme, fact
    assert verify(zip_path) == []


def test_extract_gives_back_the_directory_exactly(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    zip_path = export(run, tmp_path / "bundle.zip")
    root = extract(zip_path, tmp_path / "back", bundle_files=False)
    assert root.name == run.name
    assert {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()} == \
        {p.relative_to(run): p.read_bytes() for p in run.rglob("*") if p.is_file()}
    with pytest.raises(BundleError, match="not empty"):
        extract(zip_path, tmp_path / "back")


def test_a_directory_that_is_no_run_is_refused(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(BundleError, match="not a run directory"):
        export(tmp_path / "empty", tmp_path / "x.zip")
    assert not (tmp_path / "x.zip").exists()


def flip_byte_of_member(zip_path: Path, member: str) -> None:
    with zipfile.ZipFile(zip_path) as zf:
        info = zf.getinfo(member)
    data = bytearray(zip_path.read_bytes())
    # local header: 30 bytes + name + extra, then the (compressed) data
    name_len = int.from_bytes(data[info.header_offset + 26:info.header_offset + 28], "little")
    extra_len = int.from_bytes(data[info.header_offset + 28:info.header_offset + 30], "little")
    start = info.header_offset + 30 + name_len + extra_len
    data[start + info.compress_size // 2] ^= 0x01
    zip_path.write_bytes(bytes(data))


def test_a_flipped_byte_is_reported(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    zip_path = export(run, tmp_path / "bundle.zip")
    flip_byte_of_member(zip_path, f"{run.name}/flows.csv")
    problems = verify(zip_path)
    assert problems and any("flows.csv" in p for p in problems), problems
    with pytest.raises(BundleError, match="fails verification"):
        extract(zip_path, tmp_path / "never")
    assert not (tmp_path / "never").exists()


def test_altered_missing_and_extra_files_are_reported(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    good = export(run, tmp_path / "good.zip")
    bad = tmp_path / "bad.zip"
    with zipfile.ZipFile(good) as src, zipfile.ZipFile(bad, "w") as dst:
        for item in src.infolist():
            if item.filename.endswith("summary.json"):
                dst.writestr(item.filename, b'{"jain_index": 0.5}')  # altered, valid CRC
            elif not item.filename.endswith("loss_drops_bottleneck.txt"):
                dst.writestr(item.filename, src.read(item.filename))
        dst.writestr(f"{run.name}/extra.txt", b"not in the manifest")
        dst.writestr("../evil.txt", b"x")
    problems = verify(bad)
    assert any("summary.json" in p and "mismatch" in p for p in problems)
    assert any("loss_drops_bottleneck.txt" in p and "missing" in p for p in problems)
    assert any("extra.txt" in p and "not listed" in p for p in problems)
    assert any("unsafe" in p and "evil" in p for p in problems)


@pytest.mark.parametrize("name", ["/etc/evil", "../evil", "run/../../evil", "run\\..\\evil"])
def test_unsafe_member_names_are_reported(tmp_path: Path, name: str) -> None:
    run = make_run(tmp_path)
    zip_path = export(run, tmp_path / "bundle.zip")
    with zipfile.ZipFile(zip_path, "a") as zf:
        zf.writestr(name, b"x")
    assert any("unsafe" in p and repr(name) in p for p in verify(zip_path)), verify(zip_path)
    with pytest.raises(BundleError):
        extract(zip_path, tmp_path / "never")
    assert not (tmp_path / "evil").exists() and not (tmp_path / "never").exists()


def test_not_a_zip_is_a_problem_not_an_exception(tmp_path: Path) -> None:
    path = tmp_path / "junk.zip"
    path.write_bytes(b"PK\x03\x04 definitely not a zip")
    assert verify(path) and verify(tmp_path / "absent.zip")
