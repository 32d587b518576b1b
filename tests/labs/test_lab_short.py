"""Every lab in labs/ end to end in its shortened form, as root, through the real CLI: the run exits 0
and every step's checkpoints were evaluated and pass. Labs added to labs/ are picked up as they land.
Budget: each lab's short form aims at 60-90 s of wall time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fastlab.labs import lab_folders
from tests.conftest import fastlab

pytestmark = pytest.mark.usefixtures("as_root")


@pytest.mark.timeout(600)
@pytest.mark.parametrize("folder", lab_folders(), ids=lambda folder: folder.name)
def test_lab_short_form_passes(folder: Path, tmp_path: Path) -> None:
    out = tmp_path / folder.name
    proc = fastlab("lab", "run", folder.name, "--short", "--out", str(out), timeout=540)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    record = json.loads((out / "lab.json").read_text())
    assert record["passed"] and record["short"], record
    for step in record["steps"]:
        assert step["checks"] and not step["error"], step
        assert all(check["passed"] for check in step["checks"]), step
