"""The reproduction scorecard (fastlab.labs.scorecard, `fastlab reproduce`) on the labs' recorded runs.

Deterministic: every figure below is a checkpoint's figure on a recording in labs/*/recorded/full, read
through the lab's own evaluation; a change of a recording or of a checkpoint moves it and shows here."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from fastlab.labs import scorecard
from fastlab.labs.kit import FAIL, INCONCLUSIVE, LABS_DIR, PASS, Lab, load_lab
from fastlab.labs.scorecard import MIXED, UNMEASURED, ClaimsError, combine, load_claims, score
from fastlab.labs.scorecard_figure import AXIS_X0, AXIS_X1, svg
from tests.conftest import fastlab
from tests.unit.test_labs import with_verdict


@pytest.fixture(scope="module")
def rows() -> dict[str, scorecard.Row]:
    return {r.claim.id: r for r in score(load_claims())}


# The checkpoint's figure on each claim's recording (labs/NN-*/recorded/full/<step>), to the digits the
# recording gives it. Lab 06's are its recordings with the element fitted to one and two flows (issue 49).
RECORDED = {
    "sc2002-row-1": 0.974871, "sc2002-row-2": 0.974644, "sc2002-row-7": 0.986178, "sc2002-row-9": 0.985825,
    "sc2002-row-10": 0.97415,
    "reno-recovery-1g": 1237.83, "reno-recovery-law": 0.99385, "hstcp-slac-response": 0.948436,
    "reno-slac-response": 1.0042, "hstcp-over-reno-slac": 2.05134, "hstcp-over-reno-cern": 2.087,
    "docsis-alpha": 12.0, "simple-alpha": 4.0, "docsis-phantom-delay": 142.17, "docsis-min-rtt-rise": 0.938631,
    "docsis-alpha-two-flows": 24.0, "simple-alpha-two-flows": 4.0,
    "red-312m": 0.999053, "red-625m": 0.991156, "red-2g5": 0.942169, "red-10g": 0.348924,
    "fast-312m": 0.999996, "fast-625m": 1.00001, "fast-2g5": 0.998178, "fast-10g": 0.998589,
}
def test_every_claim_of_the_issue_is_listed() -> None:
    """Issue 49 item 6: the SC2002 table's rows, the fairness runs, Reno's recovery, HSTCP vs standard TCP on
    both paths, FAST's alpha on DOCSIS and the simple link, the DOCSIS delay, two flows, TCP/RED vs FAST."""
    claims = {c.id: c for c in load_claims().claims}
    assert {f"sc2002-row-{n}" for n in (1, 2, 7, 9, 10)} <= set(claims)
    assert {c.step for c in claims.values() if c.lab == 4} == {"sc2002-fast-one", "sc2002-fast-pair"}
    assert {c.lab for c in claims.values()} == {1, 3, 4, 5, 6, 10}
    assert {c.step for c in claims.values() if c.lab == 5} == {"slac", "cern"}  # UCL-SLAC and UCL-CERN
    assert {"docsis-alpha", "simple-alpha", "docsis-phantom-delay", "docsis-alpha-two-flows",
            "simple-alpha-two-flows"} <= set(claims)
    assert {c.id for c in claims.values() if c.lab == 10} == {f"{k}-{p}" for k in ("red", "fast")
                                                              for p in ("312m", "625m", "2g5", "10g")}


def test_each_claim_names_a_checkpoint_of_its_step_or_is_unmeasured_for_want_of_the_step(
        rows: dict[str, scorecard.Row]) -> None:
    """A claim measures through a checkpoint its step calls (judge_run refuses another); a claim whose step
    this checkout's lab lacks is UNMEASURED and says so, never PASS."""
    labs: dict[int, Lab] = {}
    for row in rows.values():
        lab = labs.setdefault(row.claim.lab, load_lab(row.claim.lab))
        if row.claim.step in {s.id for s in lab.steps}:
            assert row.claim.check in {c.label for c in lab.step(row.claim.step).checkpoints}, row.claim.id
            assert row.verdict != UNMEASURED, row.claim.id
        else:
            assert row.verdict == UNMEASURED and row.median is None and not row.runs
            assert row.reason == f"lab {lab.name} has no step {row.claim.step} in this checkout"


def test_the_recorded_figures_and_verdicts() -> None:
    """Each measured claim: its recording's figure (tight: 1e-5 relative), one run counted, the lab's verdict
    PASS (every recording passes all its checkpoints: fastlab.labs.record), the scale it ran at as stated."""
    rows = {r.claim.id: r for r in score(load_claims())}
    measured = {k: r for k, r in rows.items() if r.verdict != UNMEASURED and k not in DRAWN}
    assert set(measured) == set(RECORDED)
    for claim_id, figure in RECORDED.items():
        row = measured[claim_id]
        assert row.median == pytest.approx(figure, rel=1e-5), claim_id
        assert row.least == row.most == row.median and row.counted == 1, claim_id
        assert row.verdict == PASS and [r.status for r in row.runs] == [PASS], claim_id
        assert row.reason == "", f"{claim_id}: {row.reason}"  # the recording ran at the claim's scale
    assert rows["sc2002-row-1"].runs[0].run == "03-sc2002-table/recorded/full/row-1"


# Claims over draws (lab 04's fairness): judged on the share of the step's ten recorded draws (seeds 1-10) in
# which the checkpoint holds; the figure is its median over them. (share, median, least, most) as recorded.
DRAWN = {"fairness-fast-one": ((10, 10), 2.04914, 1.30762, 2.77798),
         "fairness-fast-pair": ((10, 10), 3.380565, 1.85337, 8.78599)}


def test_the_fairness_claims_are_judged_on_the_share_of_their_draws() -> None:
    """Issue 49 item 5: the scorecard's fairness rows count the ten recorded draws, each run's own status
    (pass: FAST's side ahead in that draw), and the row's verdict is the share's (Wilson's interval above one
    half: PASS), said in the row's reason; never one run's."""
    rows = {r.claim.id: r for r in score(load_claims())}
    for claim_id, expected in DRAWN.items():
        row = rows[claim_id]
        assert [r.run.rsplit("/", 1)[1] for r in row.runs] == [f"seed-{n}" for n in range(1, 11)], claim_id
        (passes, conclusive), median, least, most = expected  # type: ignore[misc]
        assert sum(r.status == PASS for r in row.runs) == passes and row.counted == conclusive, claim_id
        assert (row.median, row.least, row.most) == (pytest.approx(median, rel=1e-5), pytest.approx(least, rel=1e-5),
                                                     pytest.approx(most, rel=1e-5)), claim_id
        assert row.reason.startswith(f"{passes} of {conclusive} conclusive draws, 95 % interval"), row.reason
        assert row.verdict == PASS, (claim_id, row.reason)


def test_the_physics_the_scorecard_shows() -> None:
    """What the table says, in the papers' terms: the SC2002 rows at or above their published utilization;
    Reno/RED's utilization falling as capacity grows while FAST's stays at the link's; HSTCP above Reno."""
    rows = {r.claim.id: r for r in score(load_claims())}
    for n, published in ((1, 0.95), (2, 0.92), (7, 0.90), (9, 0.90), (10, 0.88)):
        assert rows[f"sc2002-row-{n}"].median >= published  # type: ignore[operator]
    red = [rows[f"red-{p}"].median for p in ("312m", "625m", "2g5", "10g")]
    assert red == sorted(red, reverse=True) and red[-1] < 0.4  # type: ignore[type-var]
    assert all(rows[f"fast-{p}"].median > 0.99 for p in ("312m", "625m", "2g5", "10g"))  # type: ignore[operator]
    assert rows["hstcp-over-reno-slac"].median > 1 and rows["hstcp-over-reno-cern"].median > 1  # type: ignore[operator]


def test_verdicts_combine_over_runs() -> None:
    assert combine([]) == UNMEASURED
    assert combine([INCONCLUSIVE, INCONCLUSIVE]) == INCONCLUSIVE
    assert combine([PASS, INCONCLUSIVE, PASS]) == PASS
    assert combine([FAIL, INCONCLUSIVE]) == FAIL
    assert combine([PASS, FAIL, INCONCLUSIVE]) == MIXED


def test_an_unfaithful_recording_is_inconclusive_and_its_figure_not_counted(tmp_path: Path) -> None:
    """The claim judged on the recording, an unfaithful copy of it and a copy without a verdict: the two
    copies are INCONCLUSIVE (never PASS or FAIL), the claim PASS on the one conclusive run, its figure
    taken over that run only; with only the unfaithful copy the claim is INCONCLUSIVE, figure shown."""
    lab = load_lab(3)
    recording = lab.recording("row-1")
    unfaithful = with_verdict(recording, tmp_path / "unfaithful", False)
    no_verdict = with_verdict(recording, tmp_path / "none", None)
    claims = load_claims()
    runs = [("recorded", recording), ("unfaithful", unfaithful), ("none", no_verdict)]
    (row,) = score(claims, runs_of=lambda _lab, _step: runs, only=["sc2002-row-1"])
    assert [r.status for r in row.runs] == [PASS, INCONCLUSIVE, INCONCLUSIVE]
    assert row.verdict == PASS and row.counted == 1 and row.median == pytest.approx(0.974871, rel=1e-5)
    (row,) = score(claims, runs_of=lambda _lab, _step: runs[1:2], only=["sc2002-row-1"])
    assert row.verdict == INCONCLUSIVE and row.median == pytest.approx(0.974871, rel=1e-5)


def test_runs_that_disagree_are_mixed_with_the_spread_of_their_figures() -> None:
    """Row 1's claim on its recording, on row 2's (f1 is one of two flows; the checkpoint reads f1's port)
    and on the compare step's (f1 is FAST losing every 1000th packet at 1/200 scale: 0.886, under the
    published 0.95): PASS, PASS, FAIL -> MIXED, the median and spread over the three figures, and the
    scale the odd run ran at said."""
    lab = load_lab(3)
    runs = [(s, lab.recording(s)) for s in ("row-1", "row-2", "compare")]
    (row,) = score(load_claims(), runs_of=lambda _lab, _step: runs, only=["sc2002-row-1"])
    assert [r.status for r in row.runs] == [PASS, PASS, FAIL]
    assert [r.figure for r in row.runs] == pytest.approx([0.974871, 0.974253, 0.886468], rel=1e-5)
    assert row.verdict == MIXED and row.counted == 3
    assert (row.least, row.median, row.most) == pytest.approx((0.886468, 0.974253, 0.974871), rel=1e-5)
    assert row.reason == "ran at scale 0.005, the claim's step at 1"


def test_a_claim_the_short_form_cannot_show_is_unmeasured_in_short_runs() -> None:
    """Lab 04's fairness claim is `full_only` (a 13-s run holds one loss per flow or none): judged on short
    runs it is UNMEASURED with lab.yaml's reason, not a checkpoint the step lacks."""
    lab = load_lab(4)
    runs = [("short", lab.recording("sc2002-fast-one", short=True))]
    (row,) = score(load_claims(), runs_of=lambda _lab, _step: runs, short=True, only=["fairness-fast-one"])
    assert row.verdict == UNMEASURED and not row.runs
    assert row.reason.startswith("the short form skips fast_outlasts_linux: a 13 s run holds one loss per flow")
    # a claim the short form measures: judged on the short recording, its other scale said
    (row,) = score(load_claims(), runs_of=lambda lab, step: [("s", lab.recording(step, short=True))], short=True,
                   only=["sc2002-row-1"])
    assert row.verdict == PASS and row.reason == "ran at scale 0.05, the claim's step at 1"


def test_the_figure_is_deterministic_and_places_each_figure_on_its_axis(rows: dict[str, scorecard.Row]) -> None:
    listed = list(rows.values())
    text = svg(listed)
    assert text == svg(listed)
    groups = re.findall(r'<g class="claim" data-claim="([a-z0-9-]+)" data-verdict="(\w+)">', text)
    assert groups == [(r.claim.id, r.verdict) for r in listed]
    # a utilization on the shared 0..1.1 axis: row 1's 0.9749 and the published 0.95
    row1 = text.split('data-claim="sc2002-row-1"')[1].split("</g>")[0]
    cx = float(re.search(r'class="measured" cx="([\d.]+)"', row1).group(1))  # type: ignore[union-attr]
    assert cx == pytest.approx(AXIS_X0 + 0.974871 / 1.1 * (AXIS_X1 - AXIS_X0), abs=0.06)
    diamond = float(re.search(r'class="published" d="M([\d.]+),', row1).group(1))  # type: ignore[union-attr]
    assert diamond == pytest.approx(AXIS_X0 + 0.95 / 1.1 * (AXIS_X1 - AXIS_X0), abs=0.06)
    # a claim without a run shows its published figure and no measured dot
    (unmeasured,) = score(load_claims(), runs_of=lambda _lab, _step: [], only=["docsis-alpha-two-flows"])
    alone = svg([unmeasured])
    assert unmeasured.verdict == UNMEASURED and unmeasured.reason == "no run of 06-fast-docsis step two-flows"
    assert 'class="published"' in alone and 'class="measured"' not in alone and "UNMEASURED" in alone


def test_the_command_prints_the_table_and_writes_the_files(tmp_path: Path) -> None:
    done = fastlab("reproduce", "--out", str(tmp_path), "--no-png", timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["claim", "source", "published", "measured", "scale", "lab/step", "verdict"]
    row1 = next(line for line in lines if line.startswith("sc2002-row-1 "))
    assert "0.95 utilization" in row1 and "0.9749 (1 run)" in row1 and row1.rstrip().endswith("PASS")
    assert "27 pass of 27 claims (judged on the recorded runs)" in done.stdout
    data = json.loads((tmp_path / "scorecard.json").read_text())
    assert data["source"] == "recordings" and len(data["rows"]) == 27
    assert (tmp_path / "scorecard.svg").read_text().startswith("<svg ")
    assert (tmp_path / "scorecard.txt").read_text().splitlines()[0] == lines[0]
    assert not (tmp_path / "scorecard.png").exists()
    one = fastlab("reproduce", "--out", str(tmp_path / "one"), "--no-png", "--claim", "red-10g", timeout=120)
    assert one.returncode == 0 and "red-10g" in one.stdout and "sc2002-row-1" not in one.stdout


HOSTILE = {
    "a value that is NaN": ("published: {value: .nan, unit: u, stated: s}", "published.value"),
    "an infinite band": ("published: {value: 1, high: .inf, unit: u, stated: s}", "published.high"),
    "a band upside down": ("published: {low: 3, high: 2, unit: u, stated: s}", "low must not be above high"),
    "a lab as text": ("lab: '3'", "claims[0].lab"),
    "a scale above 1": ("scale: 2", "claims[0].scale"),
    "a step that is a path": ("step: ../../etc", "claims[0].step"),
    "a misspelled field": ("chek: row_utilization", "claims[0].chek: unknown field"),
}
GOOD = {"id": "x", "paper": "p", "where": "w", "published": "{value: 1, unit: u, stated: s}", "lab": "3",
        "step": "row-1", "check": "row_utilization", "scale": "1.0"}


def claims_text(**change: str) -> str:
    fields = {**GOOD, **{k: v.split(": ", 1)[1] for k, v in change.items()}}
    body = ", ".join(f"{k}: {v}" for k, v in fields.items() if v != "<drop>")
    return f"papers: {{p: {{cite: c}}}}\nclaims:\n  - {{{body}}}\n"


@pytest.mark.parametrize("what", sorted(HOSTILE))
def test_a_hostile_claims_file_is_refused_in_one_line_naming_the_field(tmp_path: Path, what: str) -> None:
    line, expected = HOSTILE[what]
    key = line.split(":", 1)[0]
    path = tmp_path / "claims.yaml"
    path.write_text(claims_text(**{key: line}))
    with pytest.raises(ClaimsError) as err:
        load_claims(path)
    message = str(err.value)
    assert "\n" not in message and message.startswith(str(path)) and expected in message, message


def test_the_good_claims_file_of_the_hostile_tests_loads(tmp_path: Path) -> None:
    path = tmp_path / "claims.yaml"
    path.write_text(claims_text())
    assert load_claims(path).claims[0].step == "row-1"


@pytest.mark.parametrize("text, expected", [
    ("papers: {p: {cite: c}}\nclaims:\n  - &a {id: x}\n" + "x: [" * 40 + "]" * 40, "deep"),
    ("papers: {p: {cite: c}}\npapers: {q: {cite: c}}\nclaims: []", "papers"),
    ("- just\n- a list\n", "must be a mapping"),
    ("papers: {p: {cite: c}}\nclaims: [{id: a, paper: nobody, where: w, published: {unit: u, stated: s}, lab: 3, "
     "step: row-1, check: c, scale: 1.0}]", "claims[0].paper: no paper 'nobody'"),
    ("papers: {p: {cite: c}}\nclaims: [" + ", ".join(["{id: a, paper: p, where: w, published: {unit: u, stated: s}, "
                                                      "lab: 3, step: row-1, check: c, scale: 1.0}"] * 2) + "]",
     "claims[1].id: duplicate claim id 'a'"),
])
def test_malformed_claims_files_are_one_line(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "claims.yaml"
    path.write_text(text)
    with pytest.raises(ClaimsError) as err:
        load_claims(path)
    assert "\n" not in str(err.value) and expected in str(err.value), str(err.value)


def test_an_over_long_or_unreadable_claims_file_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_text("# " + "x" * (4 * scorecard.MAX_CLAIMS_CHARS + 10) + "\n")
    with pytest.raises(ClaimsError, match="big.yaml"):
        load_claims(big)
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    with pytest.raises(ClaimsError, match="fifo.yaml"):
        load_claims(fifo)  # a FIFO would block a reader for ever: refused before a byte
    with pytest.raises(ClaimsError, match="cannot read"):
        load_claims(tmp_path / "absent.yaml")


def test_a_claim_naming_a_checkpoint_its_step_lacks_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "claims.yaml"
    path.write_text(claims_text(check="check: no_such_check"))
    with pytest.raises(ClaimsError, match=r"claim x: check: lab 3 step row-1 has no checkpoint 'no_such_check' "
                                          r"\(it has: row_utilization, fast_equilibrium\)"):
        score(load_claims(path))


def test_the_command_refuses_bad_input_in_one_line_and_writes_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "claims.yaml"
    bad.write_text(claims_text(published="published: {value: .nan, unit: u, stated: s}"))
    out = tmp_path / "out"
    for args in (["--claims", str(bad)], ["--claim", "no-such-claim"], ["--repeat", "3"],
                 ["--run", "--repeat", "0"], ["--run", "--repeat", "1000"]):
        done = fastlab("reproduce", "--out", str(out), "--no-png", *args, timeout=120)
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, (args, done.stderr)
        assert done.stderr.startswith("fastlab: ") and not out.exists(), args


def test_numbers_print_as_the_table_shows_them() -> None:
    assert [scorecard.number(x) for x in (1237.83, 0.974871, 2.70584, 12.0, 0.0)] == ["1,238", "0.9749", "2.706",
                                                                                       "12", "0"]
    assert scorecard.claims_path() == LABS_DIR / "claims.yaml"
