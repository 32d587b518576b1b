"""What the lab handouts say about fastlab's own FAST defaults matches the code (issue: lab science).

Read from kernel-modules/core/fast_core.h, the one source of FAST's defaults: the update period
(every RTT), gamma (1/2). A handout may mention the 2002 prototype's every-other-RTT period only as
the prototype's. The multiplicative-increase threshold (`mi_threshold_us`). The BDP convention:
packets of the run's MTU, and every BDP or buffer a handout quotes, recomputed from its step's spec."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fastlab.labs.kit import load_lab
from fastlab.plan.links import resolve
from fastlab.plan.prepare import validate
from fastlab.run.ccload import default_registry
from tests.unit.test_topologies import figures

REPO = Path(__file__).resolve().parents[2]
CORE = (REPO / "kernel-modules" / "core" / "fast_core.h").read_text()
HANDOUTS = sorted((REPO / "labs").glob("*/README.md")) + sorted((REPO / "labs").glob("*/INSTRUCTOR.md"))


def define(name: str) -> str:
    match = re.search(rf"#define\s+{name}\s+(\w+)", CORE)
    assert match, name
    return match.group(1)


def test_default_period_is_every_rtt_and_no_handout_says_otherwise() -> None:
    assert define("FAST_DEF_PERIOD_KIND") == "FAST_PERIOD_RTT"
    for path in HANDOUTS:
        for line in path.read_text().splitlines():
            if re.search(r"every other RTT", line):
                assert "prototype" in line, f"{path.relative_to(REPO)}: {line.strip()}"


def test_gamma_quoted_in_handouts_is_the_default() -> None:
    """A lab whose steps set gamma (lab 09 varies it) quotes other values too, and the default at
    least once; every other handout quotes only the default."""
    gamma = f"{define('FAST_DEF_GAMMA_NUM').rstrip('U')}/{define('FAST_DEF_GAMMA_DEN').rstrip('U')}"
    quoted = [(p, m) for p in HANDOUTS for m in re.findall(r"γ = (\d+/\d+)", p.read_text())]
    assert quoted, "no handout quotes gamma"
    varies = {p.parent for p in HANDOUTS if "gamma:" in (p.parent / "lab.yaml").read_text()}
    wrong = [(str(p.relative_to(REPO)), m) for p, m in quoted if m != gamma and p.parent not in varies]
    assert not wrong, wrong
    for folder in varies:
        assert any(p.parent == folder and m == gamma for p, m in quoted), f"{folder.name} never quotes the default"



def test_mi_threshold_quoted_in_handouts_is_the_default() -> None:
    """Every quoted threshold of fastlab's multiplicative-increase heuristic (an assumption of
    fastlab's, fast_core.h deviation 5) is the default; a step that sets another (lab 03's
    `mi_threshold_us: 1000` question) writes it as a setting, which this does not match."""
    default = int(define("FAST_DEF_MI_THRESH_US").rstrip("U"))
    patterns = (r"`mi_threshold_us` \((\d+) µs", r"(\d+) µs `mi_threshold_us`", r"(\d+) µs threshold of fastlab's MI",
                r"(\d+) µs \"queue is empty\" threshold", r"queueing delay\s+is below (\d+) µs")
    quoted = [(str(p.relative_to(REPO)), int(m)) for p in HANDOUTS for pat in patterns
              for m in re.findall(pat, p.read_text())]
    assert len(quoted) >= 4, quoted  # labs 03 and 07, handout and notes
    assert all(value == default for _, value in quoted), quoted

# Bandwidth-delay products and buffers the handouts quote, each with the lab step (and core path)
# whose spec it describes: (lab, step, path, quantity, factor, quote). `quantity` is the first flow's
# BDP in packets of the spec's MTU (1500 bytes unless a step sets it), or its bottleneck's buffer;
# the quoted number is `factor` x that quantity, rounded.
BDP_QUOTES = [
    (2, "equilibrium", None, "bdp", 4, "buffer 4 BDP (267 packets)"),
    (2, "equilibrium", None, "buffer", 1, "buffer 4 BDP (267 packets)"),
    (3, "row-1", None, "bdp", 1, "$\\mathrm{BDP} = C \\cdot \\mathrm{RTT}/(1500 \\cdot 8)$ = 15,000 packets"),
    (4, "sc2002-fast-one", None, "bdp", 0.25, "a quarter of a\n180 ms BDP = 3,750 packets"),
    (4, "sc2002-fast-one", None, "buffer", 1, "a quarter of a\n180 ms BDP = 3,750 packets"),
    (4, "fast-one", None, "buffer", 1, "buffer one BDP = 300 packets"),
    (5, "slac", None, "bdp", 1, "BDP 1,125 packets"),
    (5, "cern", None, "bdp", 1, "BDP 167 packets"),
    (8, "reroute", "abilene", "bdp", 1, "the new path's BDP at 20 Mb/s is 317"),
    (9, "gamma-half", None, "buffer", 1, "buffer 4 BDP (267 packets)"),
    (9, "reno", None, "buffer", 1, "one-BDP buffer (67 packets)"),
    (10, "red-10g", None, "bdp", 1, "| 10 Gb/s | 0.01 | 1 | 833 packets |"),
    (10, "red-2g5", None, "bdp", 0.25, "| 2.5 Gb/s | 0.04 | 4 | 208 packets |"),
]


@pytest.mark.parametrize("lab_no, step, path, quantity, factor, quote", BDP_QUOTES)
def test_bdp_and_buffer_figures_in_handouts_follow_the_specs(lab_no: int, step: str, path: str | None,
                                                             quantity: str, factor: float, quote: str) -> None:
    """The BDP convention (packets of the run's MTU, 1500 bytes by default, as routing counts them)
    and each quoted figure, recomputed from the step's spec: a spec change that moves a figure fails."""
    lab = load_lab(lab_no)
    assert quote in lab.handout(), f"{lab.name}/README.md no longer says {quote!r}"
    spec = lab.build_spec(step)
    plan = validate(spec, default_registry("bpf"))
    links = {k: resolve(v, spec.links.get(k), spec.mtu) for k, v in plan.shaped.items()}
    flow = spec.flows[0]
    fig = figures(plan, links, flow.src, flow.dst, path)
    assert fig.bottleneck_link is not None and fig.bdp_pkts is not None
    value = fig.bdp_pkts if quantity == "bdp" else links[fig.bottleneck_link].forward.limit_pkts
    assert value is not None
    quoted = int(re.findall(r"\d[\d,]*", quote)[-1].replace(",", ""))
    assert round(factor * value) == quoted, (lab.name, step, quantity, value)
