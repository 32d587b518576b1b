"""Guided labs in the web app: the lab catalogue, a lab's page data, run requests and checkpoint results.

The lab framework (`fastlab.labs.kit`) does the work: loading and validating lab folders, building a
step's spec (normal or short form) and evaluating a step's checkpoints on a run directory. This
module turns that into plain data for the pages and the JSON API (checkpoint results also in plain
words), reads the bodies of a step's run request and of a bundle with answers, and builds the spec
the new-run form opens from a handout's link. A lab step run itself is an ordinary queued run of the
app. The handout is rendered for the web by `webapp.handout`.
"""

from __future__ import annotations

import inspect
import math
import numbers
import re
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr, ValidationError

from fastlab.define.schema import ExperimentSpec, SpecError, format_validation_error, load_spec, to_plain
from fastlab.labs.draws import judge_draws, share_words
from fastlab.labs.kit import (
    FOLDER_RE,
    INCONCLUSIVE,
    PASS,
    Lab,
    LabError,
    combined_status,
    evaluate_step,
    find_lab_folder,
    lab_folders,
    load_lab_folder,
)
from fastlab.service.samples import clean
from fastlab.theory import segments


class LabNotFound(LabError):
    """No lab or step of that name: the client asked for something that does not exist (404)."""


class RunRequest(BaseModel):
    """Body of POST /api/labs/<lab>/steps/<step>/run."""

    model_config = ConfigDict(extra="forbid")
    short: StrictBool = Field(False, description="run the step's short form (shorter durations or scale, the "
                                                 "same checkpoints but those with full_only set)")


Body = TypeVar("Body", bound=BaseModel)


def parse_body(model: type[Body], data: Any, example: str) -> Body:
    """A request body as `model`, or ValueError with a one-line message naming the field."""
    if not isinstance(data, dict):
        raise ValueError(f"body: must be a JSON object such as {example}")
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise ValueError(format_validation_error(err)) from None


def run_request(data: Any) -> RunRequest:
    return parse_body(RunRequest, data, '{"short": true}')


MAX_ANSWERS_CHARS = 200_000


class BundleRequest(BaseModel):
    """Body of POST /api/runs/<id>/bundle: the bundle with the student's answers added."""

    model_config = ConfigDict(extra="forbid")
    answers: StrictStr = Field(min_length=1, max_length=MAX_ANSWERS_CHARS,
                               description="the student's answers (Markdown), stored as answers.md in the bundle")


def bundle_request(data: Any) -> BundleRequest:
    return parse_body(BundleRequest, data, '{"answers": "..."}')


# --- labs -----------------------------------------------------------------------------------------

def find_lab(ref: str, root: Path) -> Lab:
    """A lab by number, folder name or slug; LabNotFound if there is none, LabError if it cannot be loaded."""
    try:
        folder = find_lab_folder(ref, root)
    except LabError as exc:
        raise LabNotFound(str(exc)) from None
    return load_lab_folder(folder)


def find_step(lab: Lab, step_id: str) -> str:
    try:
        return lab.step(step_id).id
    except LabError as exc:
        raise LabNotFound(str(exc)) from None


def catalogue(root: Path) -> list[dict[str, Any]]:
    """Every lab folder under root; one that cannot be loaded is listed with its error, not hidden."""
    out = []
    for folder in lab_folders(root):
        try:
            lab = load_lab_folder(folder)
        except LabError as exc:
            number = int(FOLDER_RE.match(folder.name).group(1))  # type: ignore[union-attr]
            out.append({"number": number, "name": folder.name, "error": str(exc), "url": f"/labs/{folder.name}"})
            continue
        out.append(lab.as_dict() | {"url": f"/labs/{lab.name}"})
    return out


def detail(lab: Lab) -> dict[str, Any]:
    """The lab with its handout (Markdown) and each step's resolved experiment, normal and short."""
    data = lab.as_dict() | {"url": f"/labs/{lab.name}", "handout": lab.handout()}
    for step in data["steps"]:
        try:
            built, short = lab.build_spec(step["id"]), lab.build_spec(step["id"], short=True)
        except LabError as exc:
            step["experiment"] = step["experiment_short"] = None
            step["error"] = str(exc)
            step["set_shown"], step["changes"], step["short_shown"], step["short_changes"] = step["set"], [], \
                step["short"], []
            step["scaled"] = []
            continue
        step["experiment"], step["experiment_short"], step["error"] = to_plain(built), to_plain(short), None
        step["scaled"] = [s.words().strip("[]") for s in (lab.alpha_scaling(step["id"]),
                                                          lab.alpha_scaling(step["id"], short=True)) if s]
        step["set_shown"], step["changes"] = overrides_in_words(step["set"], built)
        step["short_shown"], step["short_changes"] = overrides_in_words(step["short"], short)
    return data


def overrides_in_words(sets: list[str], built: ExperimentSpec) -> tuple[list[str], list[str]]:
    """A step's overrides as a student reads them: those that set scheduled parameter changes (a cc_changes
    list in YAML, hundreds of characters) said in words from the spec they build ("server: α 1 → 2 at
    3.0 s"); the others kept as the --set lines they are."""
    shown = [s for s in sets if not s.startswith("cc_changes")]
    if len(shown) == len(sets):
        return shown, []
    return shown, segments.described(built, segments.scheduled_changes(built))


def spec_yaml(plain: dict[str, Any] | None) -> str:
    return yaml.safe_dump(plain, sort_keys=False, allow_unicode=True) if plain else ""


# --- checkpoints ----------------------------------------------------------------------------------

def _measured(value: Any) -> float | str | None:
    """JSON-safe measured value: numbers as floats (non-finite -> null), anything else as text."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return clean(float(value))
    return str(value)


UNIT_WORDS = {"pkts": "packets", "pkts/RTT": "packets per RTT"}
RANGE_RE = re.compile(r"^(\S+)\.\.(\S+)(?: (.+))?$")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def number_text(value: float) -> str:
    """A figure for people: 3 significant digits (1.00, 0.200), whole numbers as such and from 1000 on
    (1,238), an exponent only below 0.001."""
    if not math.isfinite(value):
        return "∞" if value > 0 else "−∞"
    if abs(value) >= 1000 or value == int(value):
        return f"{value:,.0f}"
    if abs(value) < 0.001:
        return f"{value:.2e}"
    return f"{value:#.3g}".rstrip(".")


def bound_text(value: float, decimals: int, up: bool, cap: bool = True) -> str:
    """A range's bound rounded outward (down for the low end, up for the high) to `decimals` (negative: to tens,
    hundreds), with at most SHOWN_DIGITS significant digits after its whole part (`cap`): the shown range always
    holds the real one. Trailing zeros are dropped (0.8, not 0.80)."""
    if value == 0 or not math.isfinite(value):
        return number_text(value)
    if cap:
        decimals = min(decimals, max(0, SHOWN_DIGITS - 1 - math.floor(math.log10(abs(value)))))
    scale = 10.0 ** decimals
    rounded = (math.ceil if up else math.floor)(round(value * scale, 9)) / scale
    text = f"{rounded:,.{max(decimals, 0)}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


SHOWN_DIGITS = 3  # a range's bounds as a student reads them: "between 0.994 and 1.01", not "0.9944 and 1.006"


def range_texts(lo: float, hi: float, measured: float | None = None, passed: bool = True) -> tuple[str, str, int]:
    """A checkpoint's range rounded to what matters: its width to two significant digits (a bound that would
    round to zero keeps its first digit), each bound at most three; a figure that failed is shown with the
    digits that put it outside the shown range. Returns (low, high, decimals for the figure)."""
    width = hi - lo
    decimals = 1 - math.floor(math.log10(width)) if math.isfinite(width) and width > 0 else 3
    def zero(text: str) -> bool:
        return float(text.replace(",", "")) == 0

    while lo > 0 and math.isfinite(lo) and decimals < 9 and zero(bound_text(lo, decimals, False)):
        decimals += 1
    low, high = bound_text(lo, decimals, False), bound_text(hi, decimals, True)
    if measured is not None and not passed:
        while decimals < 9 and float(low.replace(",", "")) <= round(measured, decimals) <= float(high.replace(",", "")):
            decimals += 1
            low, high = bound_text(lo, decimals, False, cap=False), bound_text(hi, decimals, True, cap=False)
    return low, high, decimals


def plain_result(measured: float | str | None, expected: str, passed: bool) -> str:
    """A checkpoint's figure against its range in words: "measured 19.6 packets; expected between 17.5 and
    20.5 packets: in range" (from CheckResult's measured and "lo..hi unit" expected)."""
    m = RANGE_RE.match(expected)
    if isinstance(measured, str) or measured is None:
        return f"measured {measured or 'n/a'}" + (f" (expected: {expected})" if expected else "")
    if m is None:
        return f"measured {number_text(measured)}" + (f"; expected {expected}" if expected else "")
    try:
        lo, hi = float(m.group(1)), float(m.group(2))
    except ValueError:
        return f"measured {number_text(measured)}; expected {expected}"
    unit = UNIT_WORDS.get(m.group(3) or "", m.group(3) or "")
    u = f" {unit}" if unit else ""
    # the bounds rounded to what matters (issue 50: "0.9944 and 1.006" read as noise); one bound alone to
    # three significant digits
    if hi == math.inf:
        wanted = f"at least {bound_text(lo, SHOWN_DIGITS, False)}{u}"
    elif lo == -math.inf or lo == 0:
        wanted = f"at most {bound_text(hi, SHOWN_DIGITS, True)}{u}"
    else:
        low, high, digits = range_texts(lo, hi, measured, passed)
        wanted = f"between {low} and {high}{u}"
        if not passed and number_text(measured) in (low, high):  # a failed figure that reads as a bound
            return f"measured {measured:.{digits}f}{u}; expected {wanted}: " + (
                "below the range" if measured < lo else "above the range")
    where = "in range" if passed else ("below the range" if measured < lo else
                                       "above the range" if measured > hi else "not accepted")
    return f"measured {number_text(measured)}{u}; expected {wanted}: {where}"


# A checkpoint's docstring is written for the lab's author; on the page it reads as mathematics for a student
# (issue 50: "w = alpha * D / (D - d)" in ASCII): Greek letters, operators and powers as they are typeset,
# and the files and columns it reads folded under "details".
MATH_WORDS = ((re.compile(r"\balpha\b"), "α"), (re.compile(r"\bgamma\b"), "γ"), (re.compile(r"\bsum\("), "Σ("),
              (re.compile(r"\bsqrt\("), "√("), (re.compile(r"\blog2\("), "log₂("),
              (re.compile(r"\s\*\s|(?<=\w)\*(?=[\w(])"), "·"),
              (re.compile(r"(?<=[\w)]) x (?=[\w(])"), " × "), (re.compile(r" - "), " − "), (re.compile(r"<="), "≤"),
              (re.compile(r">="), "≥"), (re.compile(r"\^2\b"), "²"), (re.compile(r"\^3\b"), "³"),
              (re.compile(r"(?<=\s)~(?=\s)"), "≈"), (re.compile(r"\b1/gamma\b"), "1/γ"),
              (re.compile(r"\b([A-Za-z])_i\b"), "\\1ᵢ"))
# a parenthesis that names files or columns (flows.csv, summary.json, aqm_avg_queue): the "details" layer
SOURCE_ASIDE = re.compile(r"\s*\(([^()]*(?:\.csv|\.json|\b[a-z]+_[a-z_]+\b)[^()]*)\)")


def student_text(text: str) -> tuple[str, str]:
    """A checkpoint's sentence as a student reads it, and what it folds under "details": its maths typeset
    in Unicode (α·D/(D − d), √p, Σ(cwnd × packet / srtt)) and its asides that name files and columns moved out
    (pure; tests/unit/test_words.py style cases in tests/webapp/test_labs_web.py)."""
    details = [m.group(1).strip() for m in SOURCE_ASIDE.finditer(text)]
    text = SOURCE_ASIDE.sub("", text)
    for pattern, shown in MATH_WORDS:
        text = pattern.sub(shown, text)
    return text, "; ".join(details)


def what_it_checks(fn: Any) -> str:
    """The first sentence of a checkpoint function's docstring: what the check is about, in the lab's words."""
    doc = " ".join((inspect.getdoc(fn) or "").split("\n\n")[0].split())
    return SENTENCE_END.split(doc)[0] if doc else ""


def evaluate(lab: Lab, step_id: str, run_dir: Path, short: bool = False) -> dict[str, Any]:
    """The step's checkpoints on a finished run directory: each verdict with what was measured and why
    (a short-form run without the checkpoints only a full-length run can show; on a run the fidelity
    verdict calls unfaithful each is INCONCLUSIVE, with the verdict's reasons), and the same in plain
    words: which quantity (`quantity`), what the check is about (`checks`, from its docstring) and the
    figure against its range (`result`)."""
    calls = [c for c in lab.step(step_id).checkpoints if not (short and c.full_only)]
    checks = []
    for call, r in zip(calls, evaluate_step(lab, step_id, run_dir, short), strict=True):
        measured = _measured(r.measured)
        shown = number_text(measured) if isinstance(measured, float) else str(measured or "n/a")
        # two layers (issue 50): the sentence and the figure against its range for a student; the files and
        # columns the check reads and the checkpoint's own words under "details"
        about, sources = student_text(what_it_checks(lab.checks.get(call.check)))
        quantity, quantity_sources = student_text(str(r.quantity))
        one_draw = r.over_draws and r.inconclusive.startswith("one draw:")
        checks.append({"name": str(r.name), "passed": r.status == PASS, "status": r.status,
                       "inconclusive": r.inconclusive, "measured": measured, "one_draw": one_draw,
                       "recorded_draws": recorded_share(lab, step_id) if one_draw else "",
                       "expected": str(r.expected), "tolerance": str(r.tolerance), "note": str(r.note),
                       "quantity": quantity, "checks": about, "measured_text": shown,
                       "details": "; ".join(x for x in (sources, quantity_sources) if x),
                       "result": plain_result(measured, str(r.expected), bool(r.passed))})
    # a claim over draws is no verdict of one run: the step's status is its other checkpoints' (all of them
    # when the run was unfaithful, which makes every one inconclusive with the verdict's reasons)
    status = combined_status([str(c["status"]) for c in checks if not c["one_draw"]] or [INCONCLUSIVE])
    # a short-form run leaves out the checkpoints only a full-length run can show: each said, with why, so
    # "all 3 passed" is never read as the step's whole claim (lab 10's red-2g5 leaves out the two that carry it)
    skipped = [{"name": c.label, "why": c.full_only} for c in lab.step(step_id).checkpoints if short and c.full_only]
    return {"passed": status == PASS, "status": status,
            "inconclusive": next((c["inconclusive"] for c in checks if c["inconclusive"] and not c["one_draw"]), ""),
            "checks": checks, "skipped": skipped}


def recorded_share(lab: Lab, step_id: str) -> str:
    """What the step's recorded draws say of its claims over draws, in words ("" without recorded draws)."""
    runs = [(d.name, d) for d in lab.draw_recordings(step_id)]
    if not runs:
        return ""
    words = []
    for result, _draws in judge_draws(lab, step_id, runs):
        words.append(f"{result.status.upper()} over the {len(runs)} recorded draws of this step "
                     f"({share_words(result)})")
    return "; ".join(words)

def lab_spec(lab: Lab, spec: str, sets: list[str]) -> ExperimentSpec:
    """A spec file of the lab's folder with --set overrides (the new-run form's prefill); LabError naming
    the problem for a path outside the folder, a missing file or a bad override."""
    folder = lab.folder.resolve()
    path = (folder / spec).resolve()
    if not spec or not path.is_relative_to(folder) or not path.is_file() or path.suffix not in (".yaml", ".yml"):
        raise LabError(f"lab {lab.name}: no spec {spec!r} in its folder")
    if len(sets) > 20:
        raise LabError("set: at most 20 overrides")
    try:
        return load_spec(str(path), sets)
    except SpecError as exc:
        raise LabError(f"{lab.name}/{spec}: {exc}") from None
