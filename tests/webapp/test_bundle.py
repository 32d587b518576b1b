"""fastlab.bundle: export a run directory as a zip with a SHA-256 manifest, and verify it."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

from fastlab.bundle import MANIFEST, export, verify


def make_run(tmp_path: Path) -> Path:
    run = tmp_path / "20261122-050000-demo-flabcd"
    (run / "sub").mkdir(parents=True)
    (run / "summary.json").write_text('{"jain_index": 1.0}')
    (run / "flows.csv").write_text("t,flow,cwnd\n" + "".join(f"{i},f1,{i}\n" for i in range(2000)))
    (run / "sub" / "loss_drops_bottleneck.txt").write_text("17\n42\n")
    return run


def test_export_lists_every_file_with_its_sha256_and_verifies(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    zip_path = export(run, tmp_path / "out" / "bundle.zip")
    with zipfile.ZipFile(zip_path) as zf:
        names = sorted(zf.namelist())
        manifest = zf.read(f"{run.name}/{MANIFEST}").decode()
    assert names == sorted(f"{run.name}/{n}" for n in ("summary.json", "flows.csv", "sub/loss_drops_bottleneck.txt",
                                                        MANIFEST))
    digest = hashlib.sha256((run / "flows.csv").read_bytes()).hexdigest()
    assert f"{digest}  flows.csv" in manifest.splitlines()
    assert verify(zip_path) == []


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


def test_not_a_zip_is_a_problem_not_an_exception(tmp_path: Path) -> None:
    path = tmp_path / "junk.zip"
    path.write_bytes(b"PK\x03\x04 definitely not a zip")
    assert verify(path) and verify(tmp_path / "absent.zip")
