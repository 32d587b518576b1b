"""A bundle says whether the bundled run's emulation was faithful: `bundle verify` and REPRODUCE.md."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from fastlab import cli
from fastlab.results import bundle
from fastlab.sweep import points as sweep
from tests.unit.test_sweep import doc, fake_point_dir
from tests.webapp.test_bundle import SUMMARY, make_run

DROPS = "bottleneck (forward): the emulator's socket dropped 3 frames (losses no link model decided)"
UNFAITHFUL = {"faithful": False, "paths": [], "links": {}, "advice": "run fewer flows", "reasons": [DROPS]}


def test_verify_prints_the_fidelity_headline_of_the_bundled_run(tmp_path: Path, capsys) -> None:
    run = make_run(tmp_path)
    (run / "summary.json").write_text(json.dumps(SUMMARY | {"fidelity": UNFAITHFUL}))
    zip_path = bundle.export(run, tmp_path / "run.zip")
    assert bundle.fidelity_lines(zip_path) == [f"fidelity: NOT FAITHFUL — {DROPS}. To fix: run fewer flows."]
    assert cli.main(["bundle", "verify", str(zip_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith(": intact") and out[1].startswith("fidelity: NOT FAITHFUL — bottleneck (forward)")
    readme = zipfile.ZipFile(zip_path).read(f"{run.name}/{bundle.REPRODUCE}").decode()
    assert "| emulation | NOT FAITHFUL — bottleneck (forward)" in readme


def test_an_old_run_is_not_assessed(tmp_path: Path) -> None:
    zip_path = bundle.export(make_run(tmp_path), tmp_path / "old.zip")
    assert bundle.fidelity_lines(zip_path) == ["fidelity: not assessed (run made before fidelity verdicts)"]


def test_a_sweep_bundle_counts_faithful_points(tmp_path: Path) -> None:
    plan = sweep.plan_sweep(doc(params={"topology_args.rtt_ms": [10, 20, 40]}))
    directory = tmp_path / "sw"
    sweep.prepare_directory(plan, directory)
    verdicts = [{**UNFAITHFUL, "faithful": True, "reasons": [], "advice": None}, UNFAITHFUL, None]
    for point, verdict in zip(plan.points, verdicts, strict=True):
        run = fake_point_dir(directory, point, finished=True)
        if verdict is not None:
            summary = json.loads((run / "summary.json").read_text())
            (run / "summary.json").write_text(json.dumps(summary | {"fidelity": verdict}))
    zip_path = bundle.export(directory, tmp_path / "sw.zip")
    assert bundle.fidelity_lines(zip_path) == ["fidelity: 1 of 3 points faithful, 1 NOT FAITHFUL, 1 not assessed",
                                               f"  p01-r0: NOT FAITHFUL — {DROPS}"]


def test_an_unreadable_summary_is_a_bundle_error(tmp_path: Path) -> None:
    zip_path = tmp_path / "bad.zip"
    with zipfile.ZipFile(zip_path, "w") as zf:
        zf.writestr("run/spec.yaml", "name: x\n")
    with pytest.raises(bundle.BundleError, match="cannot read the run's summary.json"):
        bundle.fidelity_lines(zip_path)


def test_added_files_are_in_the_manifest_and_give_way_to_no_run_file(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    (run / "answers.md").write_text("the run's own file of that name")
    zip_path = bundle.export(run, tmp_path / "with.zip", {"answers.md": b"# my answers\n"})
    assert bundle.verify(zip_path) == []
    with zipfile.ZipFile(zip_path) as zf:
        assert zf.read(f"{run.name}/answers.md") == b"# my answers\n"
        manifest = zf.read(f"{run.name}/MANIFEST.sha256").decode()
    assert manifest.count("  answers.md\n") == 1
    for name in ("../x", "a/b", "REPRODUCE.md", ".hidden"):
        with pytest.raises(bundle.BundleError, match="an added file is a plain name"):
            bundle.export(run, tmp_path / "bad.zip", {name: b"x"})
