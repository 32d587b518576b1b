"""Handout formulas: `$...$` and `$$...$$` typeset as MathML on the server (no script, no CDN), and only
MathML's presentation elements and layout attributes ever reach the page."""

from __future__ import annotations

import pytest

from webapp.handout import _markdown, _mathml


def test_formulas_become_mathml_and_prices_stay_text() -> None:
    html = _markdown().render("Each flow keeps $w(1 - d/D) = \\alpha$ queued; $$x = \\frac{\\alpha}{q}$$ "
                              "and it costs $5 and $6.\n")
    assert '<math xmlns="http://www.w3.org/1998/Math/MathML" display="inline">' in html
    assert "<mi>α</mi>" in html and "<mfrac>" in html and 'display="block"' in html
    assert "costs $5 and $6." in html  # digits after a dollar: money, not math


@pytest.mark.parametrize("latex", [
    "\\href{javascript:window.pwned=1}{x}",          # the converter makes href="javascript:..."
    "\\text{<img src=x onerror=window.pwned=2>}",     # ... and passes \text's markup through raw
    "\\text{<script>window.pwned=3</script>}",
    "\\frac{", "x^{", "{" * 5000 + "x" + "}" * 5000,  # unreadable, or deeper than the converter recurses
])
def test_hostile_or_broken_formulas_show_as_escaped_source(latex: str) -> None:
    out = _mathml(latex, {})
    assert out.startswith("<code>") and "<math" not in out
    assert "<img" not in out and "<script" not in out and "href=" not in out


def test_markup_inside_a_formula_is_typeset_as_characters() -> None:
    """A `<` in a formula is a less-than sign: an escaped operator, never a tag."""
    out = _mathml("a < b \\le <script>c", {})
    assert "<script" not in out and out.count("&lt;") == 2 and "<mo>≤</mo>" in out
