"""A lab's handout rendered for the web page: the CLI handout (README.md) stays the source.

The handout is written for the command line (`sudo fastlab lab run 2 --step equilibrium`, "in
`report.html` look at ...", `--set ...`). On the lab page those become what the page offers instead,
decided at render time from lab.yaml's step ids, never by editing the file:

- a step's command (`fastlab lab run N --step ID`, a lone `--step ID`, and bare step ids listed after
  one) -> that step's Run button (Run short for `--short`), numbered as in the handout;
- the whole lab's command (`fastlab lab run N`) -> a button queueing every step in order, and a link
  to the steps; `--step ID` / `--short` as options -> the Run / Run short buttons; `fastlab cc set ...`
  -> the live page's alpha box;
- `report.html` inside a step's item -> a link to the step's latest run page (or to the step when it
  has none yet);
- `fastlab run labs/<this lab>/<spec> [--set ...]`, and `--set ...` inside a step's item -> a link to
  the new-run form filled with that spec and those overrides;
- the sentence that re-checks a run with `fastlab lab check` -> where the page shows checkpoints;
- the handout's title (the page heading says it) is left out.

Step numbers: each run step takes the number of the item of the handout's Steps list that first runs
it (two steps in one item: 5a, 5b), so the buttons, the step panels and the handout agree. Each step's
panel (its buttons, spec, checkpoints and the student's runs: templates/lab_step.html) is placed once,
under that item, so the page lists the steps once; a step the handout never runs gets its panel below.

Answer boxes: every item of the Questions list, and every item of the Steps list that runs nothing
(predict, compute, tabulate) or whose title is "Predict", gets a textarea (kept by lab.js and answers.js:
in the browser, and on the server for a student of a class).

Predictions stay predictions: the figures a step should show are not in its text but in the handout's
"Expected values" section, one numbered item per Steps item (the CLI handout's step says where: a link
to `#expected-values`). On the page that section leaves the flow: each item becomes a hidden block under
its step, shown (lab.js) once the answer box of the nearest item up to it holds a prediction, or when
the student asks; the step's link points to its block.

Everything generated here is escaped; the handout itself still goes through markdown-it with raw HTML
off, so HTML in the file is shown as text.
"""

from __future__ import annotations

import functools
import re
import shlex
import xml.etree.ElementTree as ET  # noqa: N817 -- the module's usual name
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import latex2mathml.converter
from markdown_it import MarkdownIt
from markdown_it.token import Token
from markupsafe import Markup, escape
from mdit_py_plugins.dollarmath import dollarmath_plugin

from fastlab.labs.kit import Lab

CHECK_SENTENCE = re.compile(r"(?:(?<=[.!?]\s)|(?<=^))[^.!?`\n][^.!?]*?`(?:sudo )?fastlab lab check[^`]*`[^.!?]*[.!?]",
                            re.MULTILINE)
CHECK_INSTEAD = "On this page each step's checkpoints are evaluated when its run has finished, under the step."
LAB_RUN = re.compile(r"^(?:sudo\s+)?fastlab\s+lab\s+run\s+(\S+)(.*)$", re.DOTALL)
SPEC_RUN = re.compile(r"^(?:sudo\s+)?fastlab\s+run\s+(.*)$", re.DOTALL)
CC_SET = re.compile(r"^(?:sudo\s+)?fastlab\s+cc\s+set\b")
LETTERS = "abcdefghijklmnopqrstuvwxyz"
# The handout's section of expected values: a numbered list, each item numbered as the Steps item it
# belongs to; the step's text points to it with a link to #expected-values (GitHub's anchor of the heading)
EXPECTED_HEADING = "expected values"
EXPECTED_ANCHOR = "expected-values"
STEP_LEAD = re.compile(r"^<p><strong>Step \d+[a-z]?</strong>\s*:?\s*")


MATHML = "http://www.w3.org/1998/Math/MathML"
# What a typeset formula may contain: MathML Core's presentation elements and their layout attributes.
# latex2mathml passes some input through (\href's URL as an attribute, \text{<img ...>} as markup), so its
# output is parsed and held to these lists; a formula with anything else is shown as its source.
MATHML_TAGS = frozenset([
    "math", "semantics", "annotation", "mrow", "mi", "mn", "mo", "ms", "mtext", "mspace", "msub",
    "msup", "msubsup", "mfrac", "msqrt", "mroot", "mover", "munder", "munderover", "mmultiscripts",
    "mprescripts", "none", "mtable", "mtr", "mtd", "mstyle", "mpadded", "mphantom", "menclose", "merror"
])
MATHML_ATTRS = frozenset([
    "display", "stretchy", "mathvariant", "fence", "separator", "lspace", "rspace", "accent",
    "accentunder", "movablelimits", "linethickness", "columnalign", "rowalign", "columnspacing",
    "rowspacing", "columnlines", "rowlines", "width", "height", "depth", "minsize", "maxsize",
    "symmetric", "largeop", "displaystyle", "scriptlevel", "form", "notation", "frame", "framespacing",
    "equalrows", "equalcolumns", "side", "align", "encoding"
])
ET.register_namespace("", MATHML)


def _mathml(latex: str, options: dict[str, Any]) -> str:
    """A handout's `$...$` (inline) or `$$...$$` (display) formula as MathML, typeset by the browser itself
    (MathML Core: no script, no font download, nothing from a CDN). The converter's output is parsed and
    re-serialized from the allowed elements and attributes only; a formula the converter cannot read, or
    whose output holds anything else, stays as its source, in code."""
    try:
        tree = ET.fromstring(latex2mathml.converter.convert(
            latex, display="block" if options.get("display_mode") else "inline"))
    except Exception:  # noqa: BLE001 -- the converter and the parser raise many types on bad input
        return f"<code>{escape(latex)}</code>"
    for element in tree.iter():
        namespace, _, tag = str(element.tag).rpartition("}")
        if namespace != "{" + MATHML or tag not in MATHML_TAGS or not set(element.attrib) <= MATHML_ATTRS:
            return f"<code>{escape(latex)}</code>"
    return ET.tostring(tree, encoding="unicode")


@functools.cache
def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
    # formulas: $...$ and $$...$$, GitHub's syntax (the same README reads there); never "$5 and $6"
    dollarmath_plugin(md, allow_space=False, allow_digits=False, double_inline=True, renderer=_mathml)
    return md


# A fenced block of the handout whose info string reads `python calculator=red ...` is the model's Python for a
# terminal (fastlab.theory.red); on the page it becomes a form that computes the same through the app
# (POST /api/theory/red), prefilled with the info string's values: flows=32,16,4,1 capacity_mbps=100
# mtu=1500 rtt_ms=100 min_th=42 max_th=417 max_p=0.01 wq=0.0024.
CALCULATORS = {"red": (("flows", "flows N′ (a list)", "32, 16, 4, 1"), ("capacity_mbps", "capacity C′ (Mb/s)", "100"),
                       ("mtu", "packet (bytes)", "1500"), ("rtt_ms", "propagation RTT (ms)", "100"),
                       ("min_th", "RED min_th (packets)", "42"), ("max_th", "RED max_th (packets)", "417"),
                       ("max_p", "RED max_p", "0.01"), ("wq", "RED w_q", "0.0024"))}
CALC_VALUE = re.compile(r"^[0-9.,eE+-]{1,60}$")


def calculator(info: str) -> str | None:
    """The calculator form for a fence's info string (see CALCULATORS), None for any other fence."""
    words = info.split()
    model = next((w.split("=", 1)[1] for w in words if w.startswith("calculator=")), None)
    if model not in CALCULATORS:
        return None
    given = dict(w.split("=", 1) for w in words if "=" in w)
    fields = "".join(
        f'<label class="field"><span class="label">{escape(label)}</span> <input name="{name}" '
        f'value="{escape(given[name] if CALC_VALUE.match(given.get(name, "")) else default)}" '
        f'size="{14 if name == "flows" else 8}" inputmode="decimal"></label>'
        for name, label, default in CALCULATORS[model])
    return (f'<form class="calculator" data-model="{model}" autocomplete="off"><p class="note">The model '
            f'(<code>fastlab.theory.{model}</code>) on this page: the same figures its Python gives in a terminal.</p>'
            f'{fields}<button type="submit">compute</button> <span class="calc-error field-error" aria-live="polite">'
            '</span><div class="calc-result scroll"></div></form>\n')


@dataclass
class WebHandout:
    html: Markup
    labels: dict[str, str] = field(default_factory=dict)  # step id -> its number in the handout ("2", "5a")
    answers: list[dict[str, str]] = field(default_factory=list)  # {key, label} of each answer box
    placed: list[str] = field(default_factory=list)  # step ids whose panel sits under their handout item
    expected: dict[int, str] = field(default_factory=dict)  # Steps item with expected values -> the box revealing them


@dataclass
class _Item:
    section: str  # "steps", "questions" or another h2's text
    number: int
    steps: list[str] = field(default_factory=list)  # step ids the item runs, in order
    title: str = ""  # its first bold words ("Predict.")


def _words(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def _step_option(words: list[str]) -> tuple[str | None, bool]:
    """`--step ID` and `--short` among a command's words."""
    step = words[words.index("--step") + 1] if "--step" in words[:-1] else None
    return step, "--short" in words


def _sets(words: list[str]) -> list[str] | None:
    """The values of `--set X --set Y` (none: []), or None if the words are anything else."""
    if len(words) % 2 or any(w != "--set" for w in words[::2]):
        return None
    return words[1::2]


class _Renderer:
    def __init__(self, lab: Lab, latest_runs: dict[str, str],
                 panel: Callable[[str, str | None], str] | None = None) -> None:
        self.lab = lab
        self.latest_runs = latest_runs
        self.panel = panel
        self.ids = [s.id for s in lab.steps]
        self.labels: dict[str, str] = {}
        self.placed: list[str] = []
        self.expected: dict[int, str] = {}  # Steps item number -> the HTML of its expected values
        self.unlocks: dict[int, str] = {}  # Steps item number -> the answer box whose prediction reveals them

    # --- which step a code span runs ----------------------------------------------------------
    def step_of(self, code: str, after_step: bool) -> tuple[str, bool] | None:
        """(step id, short) if the code span runs one of this lab's steps."""
        text = code.strip()
        m = LAB_RUN.match(text)
        if m:
            words = _words(m.group(2))
            step, short = _step_option(words)
            if self._this_lab(m.group(1)) and step in self.ids:
                return step, short
            return None
        words = _words(text)
        if len(words) == 2 and words[0] == "--step" and words[1] in self.ids:
            return words[1], False
        if after_step and text in self.ids:
            return text, False
        return None

    def _this_lab(self, ref: str) -> bool:
        return ref in (self.lab.name, self.lab.slug) or (ref.isdigit() and int(ref) == self.lab.number)

    # --- pass 1: the handout's items and the steps they run -----------------------------------
    def items(self, tokens: list[Token]) -> list[_Item]:
        out: list[_Item] = []
        section = ""
        depth = 0  # nesting of lists; the top-level list's items are the numbered steps/questions
        current: _Item | None = None
        for i, tok in enumerate(tokens):
            if tok.type == "heading_open" and tok.tag == "h2":
                section = tokens[i + 1].content.strip().lower()
            elif tok.type in ("ordered_list_open", "bullet_list_open"):
                depth += 1
            elif tok.type in ("ordered_list_close", "bullet_list_close"):
                depth -= 1
            elif tok.type == "list_item_open" and depth == 1 and tok.markup in (".", ")"):
                current = _Item(section, int(tok.info or len(out) + 1))
                out.append(current)
            elif tok.type == "list_item_close" and depth == 1:
                current = None
            elif tok.type == "inline" and current is not None:
                after_step = False
                strong = False
                for child in tok.children or []:
                    if child.type == "strong_open":
                        strong = True
                    elif child.type == "strong_close":
                        strong = False
                    elif child.type == "text" and strong and not current.title:
                        current.title = child.content.strip()
                    elif child.type == "code_inline":
                        found = self.step_of(child.content, after_step)
                        if found:
                            after_step = True
                            if found[0] not in current.steps:
                                current.steps.append(found[0])
        return out

    def number_steps(self, items: list[_Item]) -> None:
        for item in items:
            if item.section != "steps":
                continue
            new = [s for s in item.steps if s not in self.labels]
            for k, step in enumerate(new):
                self.labels[step] = str(item.number) + (LETTERS[k] if len(new) > 1 else "")

    # --- pass 2: code spans -> what the page offers ----------------------------------------------
    def label(self, step: str) -> str:
        return self.labels.get(step, step)

    def run_button(self, step: str, short: bool) -> str:
        number = self.labels.get(step)
        what = f"step {number}: {step}" if number else f"step {step}"
        return (f'<span class="step-ref" data-step="{escape(step)}"><button type="button" class="run-step" '
                f'data-step="{escape(step)}" data-short="{int(short)}">▶ Run {escape(what)}'
                f'{" (short)" if short else ""}</button> <a class="step-link" href="#step-{escape(step)}">'
                f'details</a><span class="note run-message" aria-live="polite"></span></span>')

    def form_link(self, spec: str, sets: list[str]) -> str:
        query = urlencode([("lab", self.lab.name), ("spec", spec), *(("set", s) for s in sets)])
        changes = "".join(f" + <code>{escape(s)}</code>" for s in sets)
        return (f'<a class="form-link" href="/new?{escape(query)}" title="open the new-run form with this spec">'
                f'new-run form: <code>{escape(Path(spec).name)}</code>{changes}</a>')

    def spec_in_lab(self, path: str) -> str | None:
        """A spec path of the handout (`labs/<lab>/specs/x.yaml`) as a path inside this lab's folder."""
        prefix = f"labs/{self.lab.name}/"
        rel = path[len(prefix):] if path.startswith(prefix) else None
        if rel is None or not (self.lab.folder / rel).resolve().is_relative_to(self.lab.folder.resolve()) \
                or not (self.lab.folder / rel).is_file():
            return None
        return rel

    def replace(self, code: str, step: str | None, after_step: bool) -> tuple[str | None, bool]:
        """HTML for a code span (None: leave it as code) and whether it ran a step."""
        text = code.strip()
        found = self.step_of(text, after_step)
        if found:
            return self.run_button(*found), True
        m = LAB_RUN.match(text)
        if m and self._this_lab(m.group(1)) and "--step" not in m.group(2):
            short = "--short" in _words(m.group(2))
            return (f'<span class="step-ref run-all-ref"><button type="button" class="run-all" '
                    f'data-short="{int(short)}">▶ Run every step{" (short)" if short else ""}</button>'
                    '<span class="note run-message" aria-live="polite"></span></span>'), False
        if text in ("--step ID", "--step <id>", "--step STEP"):
            return "its own <strong>Run</strong> button", False
        if text == "--short":
            return "<strong>Run short</strong>", False
        if text == "report.html":
            if step is None:
                return "the run's report (on its run page)", False
            run = self.latest_runs.get(step)
            where = f'href="/runs/{escape(run)}"' if run else f'href="#step-{escape(step)}" title="run the step first"'
            return f'<a class="report-link" {where}>the run page of step {escape(self.label(step))}</a>', False
        if CC_SET.match(text):
            return "the α box of a running run's page (<em>Change FAST while it runs</em>)", False
        m = SPEC_RUN.match(text)
        if m:
            words = _words(m.group(1))
            rel = self.spec_in_lab(words[0]) if words else None
            sets = _sets(words[1:]) if rel is not None else None
            if rel is not None and sets is not None:
                return self.form_link(rel, sets), False
            return None, False
        sets = _sets(_words(text))
        if sets and step is not None:
            lab_step = self.lab.step(step)
            if all(s in lab_step.set for s in sets):  # the step's own overrides: say what they set
                return " ".join(f"<code>{escape(s)}</code>" for s in sets), False
            return self.form_link(lab_step.spec, [*lab_step.set, *sets]), False
        return None, False

    # --- expected values: hidden until the student has predicted -----------------------------------
    def extract_expected(self, tokens: list[Token], md: MarkdownIt) -> None:
        """Take the handout's "Expected values" section out of the page's flow: each item of its numbered
        list (numbered as the Steps item it belongs to) becomes that item's hidden block (`expected_block`)."""
        start = next((i for i, t in enumerate(tokens) if t.type == "heading_open" and t.tag == "h2"
                      and tokens[i + 1].content.strip().lower() == EXPECTED_HEADING), None)
        if start is None:
            return
        end = next((i for i in range(start + 3, len(tokens)) if tokens[i].type == "heading_open"
                    and tokens[i].tag in ("h1", "h2")), len(tokens))
        section, depth, item_start, number = tokens[start:end], 0, 0, 0
        for i, tok in enumerate(section):
            if tok.type in ("ordered_list_open", "bullet_list_open"):
                depth += 1
            elif tok.type in ("ordered_list_close", "bullet_list_close"):
                depth -= 1
            elif tok.type == "list_item_open" and depth == 1:
                item_start, number = i + 1, int(tok.info or number + 1)
            elif tok.type == "list_item_close" and depth == 1:
                inner = section[item_start:i]
                for t in inner:
                    t.hidden = False  # a tight list's paragraphs: render them as paragraphs
                # the CLI's "**Step N**" lead-in: the page's block says which step already
                self.expected[number] = STEP_LEAD.sub("<p>", md.renderer.render(inner, md.options, {}), count=1)
        del tokens[start:end]

    def expected_block(self, number: int, items: list[_Item]) -> str:
        """The expected values of Steps item `number`, hidden (lab.js shows them) until the answer box of the
        nearest item up to it that has one holds a prediction, or the student asks to see them."""
        boxed = [i for i in items if i.section == "steps" and i.number <= number and self.answer_box(i)]
        key = self.answer_box(boxed[-1])["key"] if boxed else ""  # type: ignore[index]
        self.unlocks[number] = key
        after = (f"write your answer to step {boxed[-1].number} first" if boxed
                 else "think about what you expect first")
        return (f'<div class="expected" id="expected-{number}" data-item="{number}" data-after="{key}">'
                f'<p class="expected-lock note">Expected values of step {number}: {after}, or '
                f'<button type="button" class="reveal-expected">show them now</button></p>'
                f'<div class="expected-values" hidden><p class="expected-head"><strong>Expected values of step '
                f'{number}</strong></p>{self.expected[number]}</div></div>\n')

    def transform(self, tokens: list[Token], items: list[_Item]) -> list[dict[str, str]]:
        """Rewrite the code spans in place and add the answer boxes; returns the boxes."""
        answers: list[dict[str, str]] = []
        depth = 0
        index = -1
        item: _Item | None = None
        out: list[Token] = []
        for tok in tokens:
            if tok.type in ("ordered_list_open", "bullet_list_open"):
                depth += 1
            elif tok.type in ("ordered_list_close", "bullet_list_close"):
                depth -= 1
            elif tok.type == "list_item_open" and depth == 1 and tok.markup in (".", ")"):
                index += 1
                item = items[index]
            elif tok.type == "list_item_close" and depth == 1 and item is not None:
                box = self.answer_box(item)
                if box:
                    answers.append(box)
                    html = Token("html_block", "", 0)
                    html.content = (f'<div class="answer"><label for="answer-{box["key"]}">{escape(box["label"])}'
                                    f'</label><textarea id="answer-{box["key"]}" data-answer="{box["key"]}" '
                                    f'data-label="{escape(box["label"])}" rows="3" '
                                    f'placeholder="your answer"></textarea></div>\n')
                    out.append(html)
                if item.section == "steps" and item.number in self.expected:
                    block = Token("html_block", "", 0)
                    block.content = self.expected_block(item.number, items)
                    out.append(block)
                if self.panel is not None and item.section == "steps":
                    # the step's panel under the item that first runs it: the page lists each step once
                    for step in item.steps:
                        if step not in self.placed and self.labels.get(step, "").rstrip(LETTERS) == str(item.number):
                            self.placed.append(step)
                            block = Token("html_block", "", 0)
                            block.content = self.panel(step, self.labels.get(step)) + "\n"
                            out.append(block)
                item = None
            elif tok.type == "inline":
                step = item.steps[0] if item is not None and item.steps else None
                after_step = False
                for n, child in enumerate(tok.children or []):
                    if child.type == "link_open" and child.attrGet("href") == f"#{EXPECTED_ANCHOR}" \
                            and item is not None and item.number in self.expected:
                        child.attrSet("href", f"#expected-{item.number}")  # this step's block, on the page
                    if child.type != "code_inline":
                        continue
                    html_text, ran = self.replace(child.content, step, after_step)
                    after_step = after_step or ran
                    if html_text is not None:
                        new = Token("html_inline", "", 0)
                        new.content = html_text
                        tok.children[n] = new  # type: ignore[index]
            out.append(tok)
        tokens[:] = out
        return answers

    @staticmethod
    def answer_box(item: _Item) -> dict[str, str] | None:
        if item.section == "questions":
            return {"key": f"q-{item.number}", "label": f"Your answer to question {item.number}"}
        if item.section == "steps" and (not item.steps or item.title.lower().startswith("predict")):
            title = item.title.rstrip(".:")
            return {"key": f"step-{item.number}",
                    "label": f"Your notes for step {item.number}" + (f" ({title})" if title else "")}
        return None


def render(lab: Lab, latest_runs: dict[str, str] | None = None,
           panel: Callable[[str, str | None], str] | None = None) -> WebHandout:
    """The handout as HTML for the lab page (see the module's docstring); latest_runs maps a step id
    to the id of its latest run, for the links that stand for `report.html`; panel(step id, its number) gives the
    HTML (already escaped) of a step's panel, placed under the Steps item that first runs the step."""
    md = _markdown()
    text = CHECK_SENTENCE.sub(CHECK_INSTEAD, lab.handout())
    tokens = md.parse(text)
    if len(tokens) >= 3 and tokens[0].type == "heading_open" and tokens[0].tag == "h1":
        del tokens[:3]  # the page heading carries the lab's title
    renderer = _Renderer(lab, latest_runs or {}, panel)
    renderer.extract_expected(tokens, md)
    items = renderer.items(tokens)
    renderer.number_steps(items)
    answers = renderer.transform(tokens, items)
    for n, tok in enumerate(tokens):  # a model's code the page runs as a calculator instead
        calc = calculator(tok.info) if tok.type == "fence" else None
        if calc is not None:
            block = Token("html_block", "", 0)
            block.content = calc
            tokens[n] = block
    html = md.renderer.render(tokens, md.options, {})
    return WebHandout(Markup(html), renderer.labels, answers, renderer.placed, renderer.unlocks)  # noqa: S704 - raw HTML off; ours is escaped
