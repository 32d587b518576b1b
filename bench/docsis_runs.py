"""One run of the DOCSIS bench (bench/docsis.py, bench/docsis_fit.py) and its figures: the spec of a task (a
window held fixed or FAST at an alpha, on the simple link, DOCSIS, or DOCSIS without the calibrated element,
with the element's parameters when given), the run, the figures read off its folder through the typed record,
the run's length for its round trip, the alpha grids and the smallest alpha that fills the link.

Measured per run, after the warm-up: goodput (bytes acked over time, every flow); for the fixed windows
the mean and the minimum of every RTT sample the kernel took (one per ACK, `rtt_samples.csv`); for FAST
the mean srtt; the CMTS's real downstream queue (packets) and the shaper's drops. Runs whose RTT is long
(many flows, large delays) run longer: at least RUN_RTTS round trips, the first WARMUP_RTTS left out.

`--jobs N`: N runs at once, each in its own process with its own run-scoped network and emulators and
its own fidelity verdict (a run made unfaithful by a neighbour says so and is left out). A 3 Mb/s run
keeps ~20 % of one core busy (measured: 3.5 s of CPU in a 19-s run), so 4 at once stay far inside this
2-core machine. FAST is registered once by the bench before the runs start (so no run owns it and none
unregisters it under another) and unregistered at the end if the bench registered it. Caveat: runs at
once share FAST's event ring buffer, so a run's CC event log may miss events the other runs consumed; no
figure here is read from the events.
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import sys
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from fastlab.base.rundir import RTT_SAMPLES, RunFolder  # noqa: E402
from fastlab.define.schema import PhantomDelay, parse_spec  # noqa: E402
from fastlab.define.topology import build_plan  # noqa: E402
from fastlab.experiment.engine import run_experiment  # noqa: E402
from fastlab.measure.analysis import steady_goodput_mbps  # noqa: E402
from fastlab.run.ccload import default_registry  # noqa: E402

DATA = REPO / "bench" / "data" / "atov2005.yaml"
PKT_BYTES = 1500
PAYLOAD_SHARE = 1448 / 1500  # TCP payload of a 1500-byte packet, timestamps on
FULL = 0.95  # "full utilization"
LINKS = {"simple": {"mode": "simple"}, "docsis": {"mode": "docsis"},
         "docsis-off": {"mode": "docsis", "phantom": "off"}}
# FAST's floored update holds its perceived queue in (alpha - 2, alpha]; the MAC's variation adds up to
# ~1.4 packets FAST misreads (lab 06's checkpoints): the equilibrium estimate that centres the alpha grids
FLOOR_BAND_PKTS, MAC_MISREAD_PKTS = 2.0, 1.0
RUN_RTTS, WARMUP_RTTS = 50, 20  # a run lasts at least this many round trips, the first ones left out
BASE_PATH_RTT_MS = 105.0  # the base RTT and the MAC's idle share, for the round-trip estimate only


def published() -> dict[str, Any]:
    return yaml.safe_load(DATA.read_text())


# --- one run ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Task:
    """One run: a window held at `value` (kind "window") or FAST with alpha `value` (kind "alpha") for each
    of `flows` flows; `element` the phantom's parameters (None: the topology's own element)."""

    kind: str
    link: str
    value: int
    seed: int
    downstream_mbps: float = 3.0
    flows: int = 1
    element: dict[str, Any] | None = None
    duration_s: float = 20.0
    warmup_s: float = 6.0


def spec_for(task: Task) -> Any:
    """The experiment spec of a task: the docsis topology (or its twins), `flows` flows server -> client."""
    flow = ({"cc": "reno", "max_cwnd_pkts": task.value} if task.kind == "window" else
            {"cc": "fast", "cc_args": {"alpha": task.value}})
    args = dict(LINKS[task.link]) | {"downstream_mbps": task.downstream_mbps}
    spec: dict[str, Any] = {"name": f"docsis-{task.kind}{task.value}-{task.link}", "topology": "docsis",
                            "topology_args": args, "duration_s": task.duration_s, "seed": task.seed,
                            "switch": "bridge", "idle_pings": 3,
                            "flows": [{"src": "server", "dst": "client", "count": task.flows, **flow}]}
    if task.element is not None:  # the topology's own downstream shaper, with these phantom parameters
        shaper = build_plan("docsis", args).shaped["cable"].profile.policy
        assert shaper is not None
        element = PhantomDelay(**task.element)
        spec["links"] = {"cable": {"policy": shaper.model_copy(update={"phantom": element}).model_dump()}}
    return parse_spec(spec)


def _cable_forward(folder: RunFolder, warmup_s: float) -> pd.DataFrame:
    """The CMTS downstream's samples after the warm-up (the emulator's own counter series only)."""
    links = folder.links()
    rows = links[(links["link"] == "cable") & (links["direction"] == "forward")]
    if "tx_bytes" in rows:
        rows = rows[rows["tx_bytes"] >= rows["tx_bytes"].cummax()]
    return rows[rows["t"] >= warmup_s]


def steady_figures(out: Path, warmup_s: float, downstream_mbps: float) -> dict[str, Any]:
    """Goodput, utilization, RTTs, FAST's windows and the CMTS's real queue of a run after the warm-up
    (every flow together; the per-flow window as a mean over the flows)."""
    folder = RunFolder(out)
    flows = folder.flows()
    steady = flows[flows["t"] >= warmup_s]
    mbps = steady_goodput_mbps(flows, warmup_s)
    summary = folder.summary()
    idle = next((p.min_ms for p in summary.idle_rtt if p.min_ms), math.nan)
    cable = summary.link("cable")
    shares = steady.groupby("flow")["bytes_acked"].agg(lambda b: float(b.iloc[-1] - b.iloc[0]))
    n_eff = float(shares.sum() ** 2 / (shares**2).sum()) if (shares**2).sum() > 0 else math.nan
    queue = _cable_forward(folder, warmup_s)
    figures = {"goodput_mbps": mbps, "utilization": mbps / (downstream_mbps * PAYLOAD_SHARE),
               "mean_rtt_ms": float(steady["srtt_ms"].mean()), "min_rtt_ms": math.nan, "idle_rtt_ms": idle,
               "cwnd_mean": float(steady.groupby("flow")["cwnd_pkts"].mean().mean()),
               "cmts_queue_pkts": float(queue["backlog_pkts"].mean()) if not queue.empty else math.nan,
               "cmts_drops": int(cable.drops or 0) if cable is not None else 0, "flows_equal_share": n_eff,
               "retransmits": sum(f.retransmits or 0 for f in summary.flows),
               "faithful": bool(summary.faithful)}
    if folder.has(RTT_SAMPLES):  # per-packet RTTs of a clamped flow
        rtts = folder.rtt_samples()
        rtts = rtts[rtts["t"] >= warmup_s]
        figures["mean_rtt_ms"] = float((rtts["mean_rtt_ms"] * rtts["samples"]).sum() / rtts["samples"].sum())
        figures["min_rtt_ms"] = float(rtts["min_rtt_ms"].min())
    return figures


def run(task: Task, root: Path) -> dict[str, Any]:
    """One run of `task` under `root`, and its figures (the task's fields beside them)."""
    element = task.element or {}
    tag = "-".join(f"{k}{v}" for k, v in element.items() if k != "model")
    out = root / (f"{task.kind}-{task.link}-{task.value}-{task.seed}-{task.flows}f-{task.downstream_mbps:g}M"
                  f"{'-' + tag if tag else ''}")
    run_experiment(spec_for(task), out=out)
    row = asdict(task)
    row.pop("element")
    return (row | {k: v for k, v in element.items() if k != "model"}
            | {"element": element.get("model", "topology")}
            | steady_figures(out, task.warmup_s, task.downstream_mbps))


def run_all(tasks: list[Task], jobs: int, root: Path) -> list[dict[str, Any]]:
    """Every task's figures, in the tasks' order: one at a time, or `jobs` at once (see the docstring)."""
    if jobs <= 1:
        return [run(t, root) for t in tasks]
    # spawn, not fork: each worker imports fastlab afresh (no Mininet or thread state copied from here)
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        return list(pool.map(run, tasks, [root] * len(tasks)))


@contextlib.contextmanager
def fast_registered(needed: bool) -> Iterator[None]:
    """FAST registered for the bench's whole life when runs go at once, so that no run owns (and
    unregisters) it while another uses it; unregistered at the end only if this registered it."""
    build = default_registry().lookup("fast").build
    mine = needed and build.load()
    try:
        yield
    finally:
        if mine:
            build.unload()


def effective_element(link: str, element: dict[str, Any] | None) -> dict[str, Any] | None:
    """The phantom element a run on `link` has: the one given, else the topology's own (docsis only)."""
    if link != "docsis":
        return None
    return element or PhantomDelay(model="calibrated_flow_delay").model_dump()


def round_trip_s(element: dict[str, Any] | None, flows: int) -> float:
    """The round trip a full downstream shows with the element (for the run's length only): the base RTT
    and the element's delay at full load, max_delay x N^k."""
    if not element:
        return BASE_PATH_RTT_MS / 1000
    k = float(element.get("flow_exponent", 0.0))
    return (BASE_PATH_RTT_MS + float(element["max_delay_ms"]) * flows**k) / 1000


def timed(task: Task, duration_s: float, warmup_s: float) -> Task:
    """The task made long enough for its round trip: at least RUN_RTTS of them, WARMUP_RTTS left out."""
    rtt = round_trip_s(effective_element(task.link, task.element), task.flows)
    return replace(task, duration_s=max(duration_s, math.ceil(RUN_RTTS * rtt)),
                   warmup_s=max(warmup_s, math.ceil(WARMUP_RTTS * rtt)))


def equilibrium_alpha(element: dict[str, Any] | None, flows: int, downstream_mbps: float) -> float:
    """The alpha per flow FAST's equilibrium asks for (the grids' centre, not a result): the floor band, the
    MAC's misread and the element's delay at full load times each flow's packet rate."""
    rate_pps = downstream_mbps * 1e6 / (PKT_BYTES * 8) / flows
    misread = 0.0 if not element else (round_trip_s(element, flows) * 1000 - BASE_PATH_RTT_MS) / 1000 * rate_pps
    return FLOOR_BAND_PKTS + MAC_MISREAD_PKTS + misread


def alpha_grid(centre: float, points: int = 8) -> list[int]:
    """Alphas around an equilibrium estimate: steps of ~1/12 of it (at least 1), `points` of them, the
    estimate inside, none below 1."""
    step = max(1, round(centre / 12))
    first = max(1, round(centre) - (points // 2) * step)
    return [first + i * step for i in range(points)]


# --- the smallest alpha that fills the link ------------------------------------------------------------

def smallest_full_alpha(util: pd.Series) -> int | None:
    """The smallest alpha from which every larger one measured gives >= FULL (medians by alpha)."""
    alphas = sorted(util.index)
    for i, a in enumerate(alphas):
        if all(util[b] >= FULL for b in alphas[i:]):
            return int(a)
    return None


@dataclass
class AlphaNeeded:
    """The smallest alpha (per flow) that fills the link: from the median utilization by alpha, and each
    seed's own over its runs; `bracketed` when the alphas run reach from below FULL to above it."""

    median: int | None
    per_seed: list[int | None] = field(default_factory=list)
    bracketed: bool = False
    runs: int = 0
    unfaithful: int = 0

    def seeds_text(self) -> str:
        counts = pd.Series([-1 if a is None else a for a in self.per_seed]).value_counts().sort_index()
        return ", ".join(f"{'none' if a == -1 else a}: {n}" for a, n in counts.items())


def alpha_needed(rows: pd.DataFrame) -> AlphaNeeded:
    """The smallest full alpha of one condition's FAST runs (faithful runs only)."""
    kept = rows[faithful(rows)]
    if kept.empty:
        return AlphaNeeded(None, runs=len(rows), unfaithful=len(rows))
    util = kept.groupby("value")["utilization"].median()
    per_seed = [smallest_full_alpha(seed_rows.set_index("value")["utilization"])
                for _s, seed_rows in kept.groupby("seed")]
    bracketed = bool(util.iloc[0] < FULL <= util.iloc[-1])
    return AlphaNeeded(smallest_full_alpha(util), per_seed, bracketed, len(rows), len(rows) - len(kept))


def faithful(table: pd.DataFrame) -> pd.Series:
    """Which runs the fidelity verdict calls faithful: the one filter of the printed tables and the plots."""
    return table["faithful"].astype(bool)


def faithful_only(table: pd.DataFrame, what: str) -> pd.DataFrame:
    """The runs the fidelity verdict calls faithful (an unfaithful one proves nothing either way), saying how
    many were left out."""
    kept = table[faithful(table)]
    if len(kept) < len(table):
        print(f"{what}: {len(table) - len(kept)} of {len(table)} runs unfaithful, left out of the medians")
    return kept
