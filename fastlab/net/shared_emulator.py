"""One linkemu process for every emulated link of a run (the spec's `emulator: {mode: shared}`).

Role: the pure half of the shared mode. `shared_argv` turns the links' own emulator plans (each the
single-link command line `link_commands.plan_link` builds) into one multi-link command line
(`linkemu --link ID --netns PATH LINK-OPTIONS ...`, linkemu/README.md "Several links in one
process"): every link keeps its options, seed and drops log, and names the namespace of the node
that holds its interfaces. `route` hands each line the process writes to its link's handler (every
ready, stats and epoch line carries `"link"`). The executor is `shaping.Shaper`, which starts the
process through fastlab.base.supervised as it starts one per link in the per_link mode.

Why: with one process per link direction pair, every link wakes for its own packets; at low per-flow
rates the per-wake-up cost dominates (issue 34: 44,000 wake-ups a second for 10 flows x 10 Mb/s on
the row-10 path, 12 processes). One loop with one timer serves every link's due departures at once.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

# The process's CPU is reported under this key (fidelity's emulator_cores), not once per link.
SHARED_KEY = "shared emulator"
LINK_ID_RE = re.compile(r"[A-Za-z0-9_.-]{1,64}")  # what linkemu's --link takes (no JSON escaping needed)


class EmulatorPlan(Protocol):
    """What `shared_argv` reads of a link's plan (link_commands.LinkPlanResult)."""

    @property
    def link(self) -> str: ...
    @property
    def emulator_argv(self) -> tuple[str, ...]: ...


def netns_path(pid: int) -> str:
    """The network namespace of a node's shell, as linkemu's --netns takes it (pure)."""
    return f"/proc/{pid}/ns/net"


def shared_argv(plans: Sequence[EmulatorPlan], netns: Mapping[str, str]) -> list[str]:
    """One linkemu command line for every plan (pure): the binary, then per link `--link ID --netns
    PATH` and its own options. ValueError naming the link for an ID linkemu would refuse."""
    if not plans:
        raise ValueError("no emulated link to serve")
    argv = [plans[0].emulator_argv[0]]
    for plan in plans:
        if not LINK_ID_RE.fullmatch(plan.link):
            raise ValueError(f"links.{plan.link}: the shared emulator takes link ids of 1-64 of A-Z a-z 0-9 _ . -")
        argv += ["--link", plan.link, "--netns", netns[plan.link], *plan.emulator_argv[1:]]
    return argv


def link_load_bps(plan: Any) -> int:
    """A link's faster direction's rate, b/s (pure): its weight when links are spread over processes, and
    the rate placement.colocate judges a CPU by."""
    return max(int(plan.resolved[d]["rate_bps"] or 0) for d in ("forward", "reverse"))


def partition(plans: Sequence[Any], processes: int) -> list[list[Any]]:
    """The links spread over at most `processes` processes (pure): the heaviest first, each to the
    least loaded process so far (by link_load_bps; ties to the lower number), each group in the plans'
    order. Fewer groups than processes when there are fewer links."""
    n = max(1, min(processes, len(plans)))
    load = [0] * n
    member: dict[int, int] = {}
    for i in sorted(range(len(plans)), key=lambda i: -link_load_bps(plans[i])):
        k = min(range(n), key=lambda g: (load[g], g))
        member[i] = k
        load[k] += link_load_bps(plans[i])
    return [[p for i, p in enumerate(plans) if member[i] == k] for k in range(n)]


def route(handlers: Mapping[str, Callable[[dict[str, Any]], None]]) -> Callable[[dict[str, Any]], None]:
    """A message handler that passes each line to its link's handler (a line of no known link, such
    as the process's one exit line, goes nowhere)."""
    def on_message(msg: dict[str, Any]) -> None:
        handler = handlers.get(str(msg.get("link")))
        if handler is not None:
            handler(msg)
    return on_message
