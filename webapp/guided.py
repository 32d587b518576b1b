"""Guided labs in the web app: the lab catalogue, a lab's page data, run requests and checkpoint results.

The lab framework (`fastlab.labs`) does the work: loading and validating lab folders, building a
step's spec (normal or short form) and evaluating a step's checkpoints on a run directory. This
module turns that into plain data for the pages and the JSON API, renders handouts and reads the
body of a step's run request. A lab step run itself is an ordinary queued run of the app.

Handouts are repository content but are still rendered safely: CommonMark with raw HTML turned
off (HTML in a handout is shown as text) and markdown-it's link check (no javascript:/vbscript:
/file: links).
"""

from __future__ import annotations

import functools
import numbers
from pathlib import Path
from typing import Any

import yaml
from markdown_it import MarkdownIt
from markupsafe import Markup
from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError

from fastlab.labs import FOLDER_RE, Lab, LabError, evaluate_step, find_lab_folder, lab_folders, load_lab_folder
from fastlab.spec import format_validation_error, to_plain
from webapp.runner import clean


class LabNotFound(LabError):
    """No lab or step of that name: the client asked for something that does not exist (404)."""


class RunRequest(BaseModel):
    """Body of POST /api/labs/<lab>/steps/<step>/run."""

    model_config = ConfigDict(extra="forbid")
    short: StrictBool = Field(False, description="run the step's short form (shorter durations or scale, the "
                                                 "same checkpoints but those with full_only set)")


def run_request(data: Any) -> RunRequest:
    """The request body, or ValueError with a one-line message naming the field."""
    if not isinstance(data, dict):
        raise ValueError('body: must be a JSON object such as {"short": true}')
    try:
        return RunRequest.model_validate(data)
    except ValidationError as err:
        raise ValueError(format_validation_error(err)) from None


@functools.cache
def _markdown() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])


def render_markdown(text: str) -> Markup:
    return Markup(_markdown().render(text))  # noqa: S704 - raw HTML is off: the renderer escapes it


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
            step["experiment"] = to_plain(lab.build_spec(step["id"]))
            step["experiment_short"] = to_plain(lab.build_spec(step["id"], short=True))
            step["error"] = None
        except LabError as exc:
            step["experiment"] = step["experiment_short"] = None
            step["error"] = str(exc)
    return data


def spec_yaml(plain: dict[str, Any] | None) -> str:
    return yaml.safe_dump(plain, sort_keys=False, allow_unicode=True) if plain else ""


# --- checkpoints ----------------------------------------------------------------------------------

def _measured(value: Any) -> float | str | None:
    """JSON-safe measured value: numbers as floats (non-finite -> null), anything else as text."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return clean(float(value))
    return str(value)


def evaluate(lab: Lab, step_id: str, run_dir: Path, short: bool = False) -> dict[str, Any]:
    """The step's checkpoints on a finished run directory: each verdict with what was measured and why
    (a short-form run without the checkpoints only a full-length run can show)."""
    checks = [{"name": str(r.name), "passed": bool(r.passed), "measured": _measured(r.measured),
               "expected": str(r.expected), "tolerance": str(r.tolerance), "note": str(r.note)}
              for r in evaluate_step(lab, step_id, run_dir, short)]
    return {"passed": bool(checks) and all(c["passed"] for c in checks), "checks": checks}
