"""What the lab handouts say about fastlab's own FAST defaults matches the code (issue: lab science).

Read from kernel-modules/core/fast_core.h, the one source of FAST's defaults: the update period
(every RTT), gamma (1/2). A handout may mention the 2002 prototype's every-other-RTT period only as
the prototype's."""

from __future__ import annotations

import re
from pathlib import Path

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
