"""Issue 47 ("Hostile input, second round") through the command line: each finding of the CLI and of the
files it reads (specs, --set, lab.json, sweep.json, bundles) reproduced as the command a user types, in a
process of its own (`python -m fastlab`, bounded in time: a hang is a failure, not a stuck tier), then its
bound. Nothing here runs an experiment: every command is refused (or only checks) before a network is built."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from fastlab.results import api as results_api
from fastlab.results import bundle
from fastlab.sweep import points as sweep
from tests.unit.test_sweep import doc, fake_point_dir
from tests.webapp.test_bundle import SUMMARY, make_run

REPO = Path(__file__).resolve().parents[2]
SPEC = {"name": "hostile", "topology": "dumbbell", "topology_args": {"rate_mbps": 20, "rtt_ms": 40},
        "duration_s": 5, "seed": 1, "flows": [{"src": "h1", "dst": "h2", "cc": "cubic"}]}


def fastlab(*argv: str, timeout: float = 60, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    """`python -m fastlab ARGV` with this checkout first on the path; TimeoutExpired fails the test."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "fastlab", *argv], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def one_line_refusal(done: subprocess.CompletedProcess[str], *words: str) -> str:
    """The command refused with exit 2 and one line on stderr (no traceback) holding `words`."""
    err = done.stderr.strip()
    assert done.returncode == 2, (done.returncode, done.stdout[-500:], err[-2000:])
    assert "Traceback" not in err and len(err.splitlines()) == 1, err[-2000:]
    for word in words:
        assert word in err, (word, err)
    return err


def write_spec(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    return path


# --- finding 6: integers past Python's conversion limit, deep records ---------------------------------------

def test_a_yaml_integer_of_thousands_of_digits_is_one_line(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, yaml.safe_dump(SPEC).replace("seed: 1", "seed: " + "9" * 4400))
    one_line_refusal(fastlab("run", str(spec), "--check"), "an integer of 4,400 digits")
    base = write_spec(tmp_path, yaml.safe_dump(SPEC))
    one_line_refusal(fastlab("run", str(base), "--check", "--set", "seed=" + "9" * 4400), "--set seed")


def lab_run_folder(tmp_path: Path, record: object) -> Path:
    folder = tmp_path / "labrun"
    folder.mkdir()
    (folder / "lab.json").write_text(record if isinstance(record, str) else json.dumps(record))
    return folder


def test_a_lab_json_duration_of_thousands_of_digits_is_one_line(tmp_path: Path) -> None:
    record = ('{"lab": 1, "name": "01-long-fat-pipes", "short": true, "steps": [{"id": "x", "duration_s": '
              + "9" * 4400 + "}]}")
    folder = lab_run_folder(tmp_path, record)
    one_line_refusal(fastlab("lab", "check", "1", "--run", str(folder)), "lab.json", "digits")
    one_line_refusal(fastlab("lab", "keep", "1", "--run", str(folder), "--step", "x", "--as", "c", "--expect",
                             "pass", "--why", "w", "--source", "s"), "lab.json")


def test_a_lab_json_linking_to_dev_zero_is_refused_at_once(tmp_path: Path) -> None:
    """Finding 7: `lab check --run` read lab.json whole: linked to /dev/zero it never ended (and grew)."""
    folder = tmp_path / "labrun"
    folder.mkdir()
    (folder / "lab.json").symlink_to("/dev/zero")
    one_line_refusal(fastlab("lab", "check", "1", "--run", str(folder), timeout=20), "lab.json", "not a regular file")
    fifo = tmp_path / "fifo"
    fifo.mkdir()
    os.mkfifo(fifo / "lab.json")
    one_line_refusal(fastlab("lab", "check", "1", "--run", str(fifo), timeout=20), "not a regular file")


def test_sweep_status_of_a_deep_or_multiline_sweep_json(tmp_path: Path) -> None:
    """Finding 6: sweep.json params nested 400 levels crashed `sweep status`; finding 8: its newlines were
    printed as they were (a forged line in the status)."""
    plan = sweep.plan_sweep(doc(params={"topology_args.rtt_ms": [10, 20]}))
    directory = tmp_path / "sw"
    sweep.prepare_directory(plan, directory)
    state = json.loads((directory / sweep.STATE_FILE).read_text())
    deep = json.loads(json.dumps(state))
    deep["points"][0]["params"] = {"x": json.loads("[" * 400 + "]" * 400)}
    (directory / sweep.STATE_FILE).write_text(json.dumps(deep))
    one_line_refusal(fastlab("sweep", "status", str(directory)), "nested deeper")
    forged = json.loads(json.dumps(state))
    forged["name"] = "x\nsweep forged: 2 of 2 points finished"
    forged["points"][0]["error"] = "boom\n  p99-r0  forged  done"
    forged["points"][0]["status"] = "failed"
    forged["points"][1]["params"] = {"topology_args.rtt_ms": "a\nb"}
    (directory / sweep.STATE_FILE).write_text(json.dumps(forged))
    done = fastlab("sweep", "status", str(directory))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 3, lines  # the headline and one line per point
    assert "\\n" in lines[0] and "boom\\n" in lines[1] and "a\\n" in lines[2], lines


def test_a_nan_range_is_refused_in_words(tmp_path: Path) -> None:
    """Finding 8: a NaN range said "a value is listed twice"."""
    for section in ({"from": ".nan", "to": 1, "num": 3}, {"from": 0, "to": ".inf", "num": 3},
                    {"from": 0, "to": 1, "step": ".nan"}):
        text = yaml.safe_dump({**SPEC, "sweep": {"params": {"topology_args.rtt_ms": section}}})
        spec = write_spec(tmp_path, text.replace("'.nan'", ".nan").replace("'.inf'", ".inf"))
        err = one_line_refusal(fastlab("sweep", "run", str(spec), "--check"), "sweep.params.topology_args.rtt_ms")
        assert "finite" in err and "listed twice" not in err, err
    spec = write_spec(tmp_path, yaml.safe_dump(SPEC) + "sweep:\n  params:\n    topology_args.rtt_ms: [.nan, .nan]\n")
    err = one_line_refusal(fastlab("sweep", "run", str(spec), "--check"), "sweep.params.topology_args.rtt_ms")
    assert "finite" in err and "listed twice" not in err, err


# --- finding 6/7: bundles ---------------------------------------------------------------------------------

def rewrite(zip_path: Path, top: str, members: dict[str, bytes]) -> None:
    """The bundle with `members` (names under `top`) added, each listed in a manifest rewritten to match."""
    with zipfile.ZipFile(zip_path) as zf:
        kept = {n: zf.read(n) for n in zf.namelist() if not n.endswith(bundle.MANIFEST)}
        manifest = zf.read(f"{top}/{bundle.MANIFEST}").decode()
    kept.update({f"{top}/{rel}": data for rel, data in members.items()})
    lines = [line for line in manifest.splitlines() if line.split("  ", 1)[1] not in members]
    lines += [f"{hashlib.sha256(data).hexdigest()}  {rel}" for rel, data in members.items()]
    with zipfile.ZipFile(zip_path, "w") as zf:
        for name, data in kept.items():
            zf.writestr(name, data)
        zf.writestr(f"{top}/{bundle.MANIFEST}", "\n".join(lines) + "\n")


def test_bundle_verify_says_intact_only_of_what_it_can_read(tmp_path: Path) -> None:
    """Finding 6: `bundle verify` printed "intact" and then crashed on a 100k-deep summary.json or a fidelity
    reason that was not a string (each bundle crafted with a manifest that matches)."""
    for name, summary in (("deep", "[" * 100_000 + "]" * 100_000),
                          ("reason", json.dumps(SUMMARY | {"fidelity": {"faithful": False, "reasons": [{"x": 1}],
                                                                         "advice": 7}})),
                          ("huge", '{"flows": [], "jain_index": ' + "9" * 4400 + "}"),
                          ("lines", json.dumps(SUMMARY | {"fidelity": {"faithful": False, "reasons": ["a\nb"],
                                                                         "advice": "c\nd"}}))):
        run = make_run(tmp_path / name)
        zip_path = bundle.export(run, tmp_path / f"{name}.zip")
        rewrite(zip_path, run.name, {"summary.json": summary.encode()})
        done = fastlab("bundle", "verify", str(zip_path))
        assert "Traceback" not in done.stderr and done.returncode == 0, (name, done.stderr[-2000:])
        lines = done.stdout.splitlines()
        assert lines[0].endswith(": intact") and lines[1].startswith("fidelity: "), (name, lines)
        assert len(lines) == 2, (name, lines)


def test_bundle_member_names_are_normalised_before_anything_is_read(tmp_path: Path) -> None:
    """Finding 7: a member named `run1//x` passed verify as intact; with `run1/./spec.yaml` beside
    `run1/spec.yaml`, replay and results.api.load read the `./` copy, not the certified one."""
    run = make_run(tmp_path)
    top = run.name
    for extra in ({"sub//x": b"x"}, {"./spec.yaml": b"name: other\n"}, {"sub/./x": b"x"}, {"sub/": b"x"},
                  {"flows.csv/.": b"x"}):
        zip_path = bundle.export(run, tmp_path / "b.zip")
        rewrite(zip_path, top, extra)
        problems = bundle.verify(zip_path)
        assert problems and any("not a normal member name" in p or "twice" in p for p in problems), (extra, problems)
        done = fastlab("bundle", "verify", str(zip_path))
        assert done.returncode == 1 and "NOT intact" in done.stdout, (extra, done.stdout)
        with pytest.raises(results_api.ResultsError, match="fails verification"):
            results_api.load(zip_path, tmp_path / f"out-{len(problems)}-{list(extra)[0].count('/')}")
        zip_path.unlink()
    # two members whose names differ only by a `./` are one file twice
    zip_path = bundle.export(run, tmp_path / "b.zip")
    with zipfile.ZipFile(zip_path) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    with zipfile.ZipFile(zip_path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        zf.writestr(f"{top}/./spec.yaml", members[f"{top}/spec.yaml"])
    assert any("twice" in p or "not a normal member name" in p for p in bundle.verify(zip_path))


def test_replay_never_echoes_a_file_the_bundle_names(tmp_path: Path) -> None:
    """Finding 7: `bundle replay` of a spec whose trace named a root-only file printed its first bytes in the
    error. A bundle's spec may name no file outside the bundle; and a trace's error never quotes the file."""
    from fastlab.define import linktrace
    from fastlab.experiment.replay import replay_bundle

    secret = tmp_path / "secret"
    secret.write_text("s3cr3t-first-line\nmore\n")
    secret.chmod(0o600)
    run = make_run(tmp_path)
    spec = yaml.safe_load((run / "spec.yaml").read_text())
    spec["links"] = {"bottleneck": {"trace": str(secret)}}
    (run / "spec.yaml").write_text(yaml.safe_dump(spec))
    zip_path = bundle.export(run, tmp_path / "b.zip")
    with pytest.raises(bundle.BundleError) as caught:
        replay_bundle(zip_path, tmp_path / "replay")
    assert "s3cr3t" not in str(caught.value) and "outside the bundle" in str(caught.value), caught.value
    with pytest.raises(linktrace.TraceError) as caught_trace:
        linktrace.read(str(secret), "links.bottleneck.trace")
    assert "s3cr3t" not in str(caught_trace.value), caught_trace.value
    spec_path = write_spec(tmp_path, yaml.safe_dump(SPEC | {"links": {"bottleneck": {"trace": str(secret)}}}))
    done = fastlab("run", str(spec_path), "--check")
    assert "s3cr3t" not in done.stderr + done.stdout and done.returncode == 2, done.stderr


# --- finding 8: accepted when it should not be --------------------------------------------------------------

@pytest.mark.parametrize("override, field", [
    ("flows.0.count=64", None),  # 64 flows: the bound itself
    ("flows=[" + ", ".join(["{src: h1, dst: h2, count: 64}"] * 64) + "]", "flows: 4,096 flows"),
    ("flows=[{src: h1, dst: h2, count: 40}, {src: h1, dst: h2, count: 40}]", "flows: 80 flows"),
    ("duration_s=1.0e-300", "duration_s"),
    ("duration_s=0.001", "duration_s"),
    ("topology_args.rate_mbps=true", "topology_args.rate_mbps"),
    ("topology_args.rate_mbps='5'", "topology_args.rate_mbps"),
    ("links.bottleneck.rate_mbps=true", "links.bottleneck.rate_mbps"),
    ("links.bottleneck.delay_ms='5'", "links.bottleneck.delay_ms"),
    ("links.bottleneck.loss={model: bernoulli, rate: true}", "links.bottleneck.loss.rate"),
    ("flows.0.start_s=false", "flows[0].start_s"),
])
def test_values_that_mean_nothing_are_refused(tmp_path: Path, override: str, field: str | None) -> None:
    spec = write_spec(tmp_path, yaml.safe_dump(SPEC))
    done = fastlab("run", str(spec), "--check", "--set", override)
    if field is None:
        assert done.returncode == 0, done.stderr
    else:
        one_line_refusal(done, field)


def test_a_duration_shorter_than_a_few_rtts_is_refused(tmp_path: Path) -> None:
    """The lower bound follows the path: 4 base RTTs (a 600-ms path needs 2.4 s) and 4 sample periods."""
    spec = write_spec(tmp_path, yaml.safe_dump(SPEC | {"topology_args": {"rate_mbps": 20, "rtt_ms": 600}}))
    one_line_refusal(fastlab("run", str(spec), "--check", "--set", "duration_s=2"), "duration_s", "RTT")
    assert fastlab("run", str(spec), "--check", "--set", "duration_s=2.5").returncode == 0
    one_line_refusal(fastlab("run", str(spec), "--check", "--set", "duration_s=3", "--set", "sample_hz=1"),
                     "duration_s", "sample")


def test_duplicate_keys_in_a_spec_file_are_refused(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, yaml.safe_dump(SPEC) + "duration_s: 600\n")
    one_line_refusal(fastlab("run", str(spec), "--check"), "duration_s", "given twice")


def test_a_fidelity_reason_that_is_no_string_is_refused_in_one_line(tmp_path: Path) -> None:
    """A sweep whose points' reasons are not strings: the typed record refuses them where read, in one line
    naming the point, the file and the field, both when exporting the folder (REPRODUCE.md reads them) and
    when fidelity_lines reads a bundle whose summary was altered after export; never a crash."""
    plan = sweep.plan_sweep(doc(params={"topology_args.rtt_ms": [10, 20]}))
    directory = tmp_path / "sw"
    sweep.prepare_directory(plan, directory)
    odd = {"faithful": False, "reasons": [[1, 2]], "advice": None}
    runs = [fake_point_dir(directory, point, finished=True) for point in plan.points]
    zip_path = bundle.export(directory, tmp_path / "sw.zip")
    for run in runs:
        summary = json.loads((run / "summary.json").read_text())
        (run / "summary.json").write_text(json.dumps(summary | {"fidelity": odd}))
    with pytest.raises(bundle.BundleError, match=r"p00-r0/summary.json: fidelity.reasons\[0\]") as caught:
        bundle.export(directory, tmp_path / "odd.zip")
    assert "\n" not in str(caught.value)
    altered = tmp_path / "altered.zip"
    with zipfile.ZipFile(zip_path) as src, zipfile.ZipFile(altered, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename.endswith("p00-r0/summary.json"):
                data = json.dumps(json.loads(data) | {"fidelity": odd}).encode()
            dst.writestr(info, data)
    with pytest.raises(bundle.BundleError, match=r"p00-r0/summary.json: fidelity.reasons\[0\]") as caught:
        bundle.fidelity_lines(altered)
    assert "\n" not in str(caught.value)
