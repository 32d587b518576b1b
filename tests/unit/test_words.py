"""The form's refusals in words for students (webapp.words): every message the form can get back names the
field in words and says what is wrong without a regular expression or a dotted spec path."""

from __future__ import annotations

import re

import pytest

from fastlab.define.schema import SpecError, parse_spec
from webapp.words import plain

TECHNICAL = re.compile(r"[\^$\\{}]|\[[A-Za-z]|\b[a-z_]+(\[\d+\]|\.[a-z_]+)+")


@pytest.mark.parametrize("error, field, words", [
    ("links.bottleneck.loss.rate: Input should be less than or equal to 1", "links.bottleneck.loss.rate",
     "link bottleneck, loss rate: must be at most 1"),
    ("name: String should match pattern '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$'", "name",
     "name: use letters, digits, '.', '_' or '-', starting with a letter or digit (at most 64 characters)"),
    ("duration_s: Input should be greater than 0", "duration_s", "duration (s): must be more than 0"),
    ("flows[0].cc_args: alpha=0 is out of range [1, 10000] packets", "flows[0].cc_args.alpha",
     "flow 1, alpha: must be between 1 and 10000 packets (got 0)"),
    ("cc_changes[0].at_s: after the run ends (20 s)", "cc_changes[0].at_s",
     "scheduled change 1, at (s): after the run ends (20 s)"),
    ("topology_args.rate_mbps: Input should be a finite number", "topology_args.rate_mbps",
     "rate (Mb/s): must be an ordinary number (not NaN or infinity)"),
    ("seed: Input should be a valid integer", "seed", "seed: must be a whole number"),
    ("flows[0].start_s (3) must be before duration_s (2)", "",
     "flow 1, start (s) (3) must be before the run's duration (2)"),
    # issue 50: an empty flow list, and a link's own check naming its schedule step (it showed schedule[0].rate_mbps)
    ("flows: List should have at least 1 item after validation, not 0", "flows",
     "flows: needs at least 1 flow: add one"),
    ("links.bottleneck: schedule[0].rate_mbps: the trace sets the link's capacity (delay_ms and loss steps can run "
     "with it)", "links.bottleneck.schedule[0].rate_mbps",
     "link bottleneck, schedule 1, rate (Mb/s): the trace sets the link's capacity (delay_ms and loss steps can run "
     "with it)"),
    ("links.bottleneck.schedule[1].at_s: 99 s is not before duration_s (20 s): the step would never come",
     "links.bottleneck.schedule[1].at_s",
     "link bottleneck, schedule 2, at (s): 99 s is not before the run's duration (20 s): the step would never come"),
])
def test_each_refusal_in_words(error: str, field: str, words: str) -> None:
    assert plain(error) == (field, words)
    assert not TECHNICAL.search(words), words


@pytest.mark.parametrize("change", [
    {"name": ""}, {"name": "bad name!"}, {"duration_s": -1}, {"duration_s": float("nan")}, {"seed": "x"},
    {"links": {"bottleneck": {"loss": {"model": "bernoulli", "rate": 2}}}},
    {"links": {"bottleneck": {"loss": {"model": "nosuch"}}}}, {"sample_hz": 0},
    {"flows": [{"src": "h1", "dst": "h2", "cc": "cubic", "start_s": "soon"}]}, {"mtu": 10**9}, {"extra": 1},
])
def test_what_the_spec_check_says_reads_without_patterns_or_paths(change: dict) -> None:
    """Real refusals of the spec schema (not strings typed here), each in words."""
    spec = {"name": "ok", "topology": "dumbbell", "duration_s": 5,
            "flows": [{"src": "h1", "dst": "h2", "cc": "cubic"}]} | change
    with pytest.raises(SpecError) as refused:
        parse_spec(spec)
    field, words = plain(str(refused.value))
    assert field and words and "Input " not in words and not TECHNICAL.search(words), (str(refused.value), words)
