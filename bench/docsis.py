"""DOCSIS calibration: the emulated cable path against the study it reproduces, side by side, the fit of
the calibrated phantom element, and its predictions for conditions whose published figures are held back.

The study (Atov, Andrew, Kennedy, Wydrowski, TENCON 2005: a real Cisco CMTS and cable modem, 3 Mb/s
down / 512 kb/s up, 100 ms of base RTT, 1500-byte packets) measured throughput, mean RTT and minimum
RTT against a *fixed* window (here `max_cwnd_pkts`: Reno held at w, below the path's BDP + buffer
nothing is lost, so the window stays at w), and the smallest FAST alpha that fills the downstream, on
DOCSIS and on a simple link of the same capacities, for one flow and for two. Its figures, as fastlab's
design brief and issue 49 state them (not digitised here), are in bench/data/atov2005.yaml: `fit` holds
the ones the phantom element is fitted to, `out_of_sample` what is only ever compared, `held_back` the
conditions whose figures are kept from this project.

Three links: `simple`, `docsis` (the sourced MAC and shaper plus the calibrated element) and
`docsis-off` (the sourced mechanisms alone, `phantom: off`).

The element (fastlab.define.schema.PhantomDelay, linkemu/phantom.h): D = max_delay x min(1, u / knee) x
N^k, u the downstream's load over the last second, N the equally loaded flows it carries. Its candidate
forms (`CANDIDATES`) differ in the flow term: k = 0 is the load-only element of 2026-11-27; k = 1 gives
every flow the same misread in packets (a hold of a fixed number of each flow's own packets); larger k
grow the delay faster than the flows share it. The fit, by code, in stages that each fit the machine's
30-minute share (raw runs under bench/data/docsis-fit/):

- `--fit-stage windows`: one flow, the fixed windows of `fit.docsis_mean_rtt_ms`, for every (max_delay_ms,
  knee) of FIT_GRID (N = 1: every candidate is the same element there);
- `--fit-stage alpha1`: one flow, FAST, each alpha its own run, at the best (max_delay_ms, knee);
- `--fit-stage flows [--candidates NAME,...]`: two flows, FAST, each alpha its own run, every candidate,
  alphas around its own equilibrium estimate;
- `--fit`: reads the stages' runs (nothing run), prints every candidate's figures and residuals (in
  half-widths of the published band), keeps the smallest form whose every residual is inside its band
  and writes bench/data/docsis-phantom-fit.json -- the source of fastlab.define.schema.PHANTOM_FIT_*
  (a unit test holds them to it).

`--predict`: live runs of the fitted element where the study's figures are held back -- one flow at
0.5, 1, 2 and 3 Mb/s, and 3, 4 and 6 flows at 3 Mb/s: the alpha per flow that fills the downstream, the
target queue alpha x MTU / C, whether the 512 ms shaping buffer still lets the flows fill the link. Raw
runs and the printed table under bench/data/docsis-predictions/. Nothing is fitted to them.

Default: fixed windows (`--windows`) and FAST alphas (`--alphas`, each alpha its own run) on the links
asked (`--links`), `--repeat` seeds each, `--flows` flows: medians, the published figure beside each,
the smallest alpha with >= 95 % utilization per link against the published band.

`--jobs N`: N runs at once, each in its own process with its own run-scoped network and emulators and
its own fidelity verdict (a run made unfaithful by a neighbour says so and is left out). A 3 Mb/s run
keeps ~20 % of one core busy (measured: 3.5 s of CPU in a 19-s run), so 4 at once stay far inside this
2-core machine. FAST is registered once by the bench before the runs start (so no run owns it and none
unregisters it under another) and unregistered at the end if the bench registered it. Caveat: runs at
once share FAST's event ring buffer, so a run's CC event log may miss events the other runs consumed; no
figure here is read from the events.

`--plot FILE.html` (with `--from a.json,b.json` to draw saved `--json` dumps without running): the
aggregate plots -- utilization and mean/minimum RTT against the fixed window, utilization and FAST's own
window against alpha -- emulated medians with their min-max over the faithful runs, the published
figures and bands beside them. Medians everywhere leave unfaithful runs out (and say how many).

Measured per run, after the warm-up: goodput (bytes acked over time, every flow); for the fixed windows
the mean and the minimum of every RTT sample the kernel took (one per ACK, `rtt_samples.csv`); for FAST
the mean srtt; the CMTS's real downstream queue (packets) and the shaper's drops. Runs whose RTT is long
(many flows, large delays) run longer: at least RUN_RTTS round trips, the first WARMUP_RTTS left out.
Run as root: `sudo .venv/bin/python bench/docsis.py [--fit | --fit-stage S | --predict] [--windows
5,10,...] [--alphas 1,2,...] [--links simple,docsis,docsis-off] [--repeat N] [--first-seed N] [--jobs N]
[--duration S] [--warmup S] [--only windows|alpha] [--flows N] [--downstream 1,2,3] [--json FILE]
[--plot FILE.html [--from JSON,...]]`.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import math
import multiprocessing
import sys
import tempfile
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
FIT_FILE = REPO / "bench" / "data" / "docsis-phantom-fit.json"
FIT_RUNS = REPO / "bench" / "data" / "docsis-fit"  # the fit's raw runs, one file a stage
PREDICT_DIR = REPO / "bench" / "data" / "docsis-predictions"
PKT_BYTES = 1500
PAYLOAD_SHARE = 1448 / 1500  # TCP payload of a 1500-byte packet, timestamps on
FULL = 0.95  # "full utilization"
LINKS = {"simple": {"mode": "simple"}, "docsis": {"mode": "docsis"},
         "docsis-off": {"mode": "docsis", "phantom": "off"}}
FIT_GRID = {"max_delay_ms": [30.0, 35.0, 40.0, 45.0, 50.0], "knee": [0.3, 0.5, 0.7]}
# FAST's floored update holds its perceived queue in (alpha - 2, alpha]; the MAC's variation adds up to
# ~1.4 packets FAST misreads (lab 06's checkpoints): the equilibrium estimate that centres the alpha grids
FLOOR_BAND_PKTS, MAC_MISREAD_PKTS = 2.0, 1.0
RUN_RTTS, WARMUP_RTTS = 50, 20  # a run lasts at least this many round trips, the first ones left out
BASE_PATH_RTT_MS = 105.0  # the base RTT and the MAC's idle share, for the round-trip estimate only


@dataclass(frozen=True)
class Candidate:
    """One form of the calibrated element: its flow exponent k (D grows as N^k) and what it stands for."""

    name: str
    model: str
    flow_exponent: float
    free_parameters: int  # fitted numbers: max_delay_ms and knee, and k where the form has a flow term
    reading: str


CANDIDATES = [
    Candidate("load", "calibrated_load_delay", 0.0, 2,
              "the aggregate load alone (the element of 2026-11-27): any delay of the aggregate -- load, "
              "aggregate window, CMTS queue -- gives each of n flows 1/n of one flow's misread"),
    Candidate("flows^1", "calibrated_flow_delay", 1.0, 3,
              "every flow misreads the same number of its own packets (a hold of a fixed count of each "
              "flow's packets): the alpha per flow stays one flow's"),
    Candidate("flows^1.5", "calibrated_flow_delay", 1.5, 3, "the flow exponent fitted: between"),
    Candidate("flows^2", "calibrated_flow_delay", 2.0, 3, "the flow exponent fitted: each flow's misread "
              "grows with the number of flows"),
    Candidate("flows^2.25", "calibrated_flow_delay", 2.25, 3, "the flow exponent fitted: a quarter steeper"),
    Candidate("flows^2.5", "calibrated_flow_delay", 2.5, 3, "the flow exponent fitted: steeper"),
    Candidate("flows^2.75", "calibrated_flow_delay", 2.75, 3, "the flow exponent fitted: a quarter steeper still"),
    Candidate("flows^3", "calibrated_flow_delay", 3.0, 3, "the flow exponent fitted: steeper still"),
]
CANDIDATE = {c.name: c for c in CANDIDATES}


def published() -> dict[str, Any]:
    return yaml.safe_load(DATA.read_text())


def simple_mean_rtt_ms(w: float, data: dict[str, Any]) -> float:
    """The simple link's mean RTT for a fixed window: the base RTT, plus 4 ms a packet beyond the BDP."""
    ref = data["out_of_sample"]["simple_mean_rtt_ms"]
    return float(ref["base"] + max(0.0, w - ref["bdp_pkts"]) * ref["ms_per_pkt"])


DATA_IP_BYTES, ACK_IP_BYTES, PING_IP_BYTES = 1500, 52, 84  # a full segment, its ACK (timestamps on), a ping


def simple_physical_rtt_ms(w: float, idle_rtt_ms: float, downstream_mbps: float, upstream_kbps: float = 512.0,
                           base_ms: float = 100.0) -> float:
    """The simple link's mean RTT for a window held at `w`, from first principles (nothing fitted). Below the
    pipe: the base RTT; two serializations of a full segment, because the receiver ACKs every second segment
    (delayed ACKs), so each ACK releases two segments back to back and the newer one -- whose RTT the sample
    is (rtt_samples.csv: RACK's, of the newest segment an ACK covers) -- waits behind the other at the
    bottleneck before its own serialization; the ACK's serialization upstream; and the hosts' share, read off
    the run's own idle ping (its RTT less the base and the ping's serializations). Once the window exceeds
    that, the link is full and Little's law gives w serializations. An odd window below the pipe leaves one
    segment a window to the delayed-ACK timer, which this leaves out."""
    t_data = DATA_IP_BYTES * 8 / (downstream_mbps * 1e3)
    t_ack = ACK_IP_BYTES * 8 / upstream_kbps
    hosts = idle_rtt_ms - base_ms - PING_IP_BYTES * 8 / (downstream_mbps * 1e3) - PING_IP_BYTES * 8 / upstream_kbps
    return max(base_ms + 2 * t_data + t_ack + hosts, w * t_data)


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


def element_of(candidate: Candidate, max_delay_ms: float, knee: float) -> dict[str, Any]:
    """The phantom parameters of a candidate form at one (max_delay_ms, knee)."""
    params: dict[str, Any] = {"model": candidate.model, "max_delay_ms": max_delay_ms, "knee": knee}
    if candidate.flow_exponent:
        params["flow_exponent"] = candidate.flow_exponent
    return params


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


# --- the fit (pure) -----------------------------------------------------------------------------------

def residuals(rows: pd.DataFrame, points: list[dict[str, float]]) -> pd.DataFrame:
    """Per published point: the emulated median mean RTT at that window and its residual in units of the
    band's half-width (|r| <= 1: inside the published band)."""
    out = []
    for point in points:
        got = rows[rows["value"] == point["window"]]["mean_rtt_ms"].median()
        half = (point["high"] - point["low"]) / 2
        out.append({"window": point["window"], "published": point["value"], "emulated": got,
                    "residual": (got - point["value"]) / half})
    return pd.DataFrame(out)


def best_fit(table: pd.DataFrame, points: list[dict[str, float]]) -> tuple[dict[str, float], pd.DataFrame]:
    """The grid point whose residuals have the least sum of squares; its parameters and the per-point
    summary of every grid point (sum of squares, worst residual)."""
    summary = []
    for (delay, knee), rows in table.groupby(["max_delay_ms", "knee"]):
        res = residuals(rows, points)
        summary.append({"max_delay_ms": delay, "knee": knee, "sum_sq": float((res["residual"] ** 2).sum()),
                        "worst": float(res["residual"].abs().max())})
    ranked = pd.DataFrame(summary).sort_values(["sum_sq", "max_delay_ms", "knee"]).reset_index(drop=True)
    best = {"max_delay_ms": float(ranked["max_delay_ms"].iloc[0]), "knee": float(ranked["knee"].iloc[0])}
    return best, ranked


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


def band_residual(value: float | None, band: dict[str, float]) -> float:
    """(value - published) in half-widths of the published band; inf when nothing was found."""
    if value is None:
        return math.inf
    return (value - band["value"]) / ((band["high"] - band["low"]) / 2)


def min_rtt_share(rows: pd.DataFrame, windows: list[int]) -> float:
    """The least, over `windows`, of the minimum RTT's rise above the idle RTT over the mean RTT's rise
    (medians by window): the study's minimum RTT rose with the window."""
    med = rows[rows["value"].isin(windows)].groupby("value")[["mean_rtt_ms", "min_rtt_ms", "idle_rtt_ms"]].median()
    return float(((med["min_rtt_ms"] - med["idle_rtt_ms"]) / (med["mean_rtt_ms"] - med["idle_rtt_ms"])).min())


def candidate_table(windows: pd.DataFrame, best: dict[str, float], alpha1: pd.DataFrame, flows: pd.DataFrame,
                    data: dict[str, Any]) -> pd.DataFrame:
    """Every candidate form at the fitted (max_delay_ms, knee): its figures and residuals against every
    published figure it must meet, and whether it meets them all. One flow is the same element for every
    candidate (N = 1), so the one-flow figures are shared; the two-flow ones are the candidate's own."""
    points = data["fit"]["docsis_mean_rtt_ms"]
    chosen = windows[(windows["max_delay_ms"] == best["max_delay_ms"]) & (windows["knee"] == best["knee"])]
    chosen = chosen[faithful(chosen)]
    rtt = residuals(chosen, points)
    share_ref = data["out_of_sample"]["docsis_min_rtt_share_of_mean_rise"]
    share = min_rtt_share(chosen, [p["window"] for p in points])
    one_band = data["out_of_sample"]["alpha_for_full"]["docsis"]
    two_band = data["fit"]["two_flow_alpha_per_flow"]
    times = data["fit"]["superlinear_total_queue"]["more_than_times_one_flow"]
    one = alpha_needed(alpha1)
    out = []
    for cand in CANDIDATES:
        rows = flows[flows["candidate"] == cand.name] if not flows.empty else flows
        two = alpha_needed(rows) if not rows.empty else AlphaNeeded(None)
        r1, r2 = band_residual(one.median, one_band), band_residual(two.median, two_band)
        ratio = (two_band["flows"] * two.median / one.median) if one.median and two.median else math.nan
        fits = (not rows.empty and float(rtt["residual"].abs().max()) <= 1 and share >= share_ref["at_least"]
                and abs(r1) <= 1 and abs(r2) <= 1 and ratio > times and two.bracketed)
        out.append({"candidate": cand.name, "k": cand.flow_exponent, "free": cand.free_parameters,
                    "rtt_worst": float(rtt["residual"].abs().max()), "min_share": share,
                    "alpha_1": one.median, "r_alpha_1": r1, "alpha_2": two.median, "r_alpha_2": r2,
                    "alpha_2_seeds": two.seeds_text() if not rows.empty else "not run",
                    "total_2_over_1": ratio, "bracketed": two.bracketed, "fits": fits,
                    "sum_sq": r1**2 + r2**2 + float((rtt["residual"] ** 2).sum())})
    return pd.DataFrame(out)


def keep(table: pd.DataFrame) -> str | None:
    """The smallest candidate form that fits: the fewest free parameters, then the least sum of squared
    residuals, then the smallest flow exponent. None when none fits."""
    fitting = table[table["fits"]].sort_values(["free", "sum_sq", "k"])
    return None if fitting.empty else str(fitting["candidate"].iloc[0])


# --- the fit's stages (live runs; raw figures kept) ------------------------------------------------------

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


def stage_file(stage: str) -> Path:
    return FIT_RUNS / f"{stage}.json"


def read_stage(stage: str) -> dict[str, Any]:
    """A stage's stored runs and settings; SystemExit naming the stage to run when it is missing."""
    path = stage_file(stage)
    if not path.is_file():
        raise SystemExit(f"{path.relative_to(REPO)}: missing: run `bench/docsis.py --fit-stage {stage}` first")
    return json.loads(path.read_text())


def write_stage(stage: str, settings: dict[str, Any], runs: list[dict[str, Any]]) -> None:
    FIT_RUNS.mkdir(parents=True, exist_ok=True)
    stage_file(stage).write_text(json.dumps({"stage": stage, **settings, "runs": runs}, indent=1,
                                            default=str) + "\n")
    print(f"written: {stage_file(stage).relative_to(REPO)} ({len(runs)} runs)")


def stage_windows(args: argparse.Namespace, root: Path, data: dict[str, Any]) -> None:
    """One flow, the published fixed windows, every (max_delay_ms, knee) of the grid (k = 0: N = 1)."""
    windows = [int(p["window"]) for p in data["fit"]["docsis_mean_rtt_ms"]]
    tasks = [Task("window", "docsis", w, args.first_seed + r,
                  element=element_of(CANDIDATE["load"], d, k), duration_s=args.duration, warmup_s=args.warmup)
             for d, k in itertools.product(FIT_GRID["max_delay_ms"], FIT_GRID["knee"])
             for r in range(args.repeat) for w in windows]
    write_stage("windows", {"grid": FIT_GRID, "repeat": args.repeat, "first_seed": args.first_seed},
                run_all(tasks, args.jobs, root))


def fitted_one_flow(data: dict[str, Any]) -> tuple[dict[str, float], pd.DataFrame, pd.DataFrame]:
    """The best (max_delay_ms, knee) of the windows stage, its ranked grid and the stage's runs."""
    table = pd.DataFrame(read_stage("windows")["runs"])
    best, ranked = best_fit(table[faithful(table)], data["fit"]["docsis_mean_rtt_ms"])
    return best, ranked, table


def stage_alpha1(args: argparse.Namespace, root: Path, data: dict[str, Any]) -> None:
    """One flow, FAST, each alpha its own run, at the fitted (max_delay_ms, knee) (k = 0: N = 1)."""
    best, _, _ = fitted_one_flow(data)
    element = element_of(CANDIDATE["load"], best["max_delay_ms"], best["knee"])
    alphas = alpha_grid(equilibrium_alpha(element, 1, 3.0))
    tasks = [timed(Task("alpha", "docsis", a, args.first_seed + r, element=element), args.duration, args.warmup)
             for r in range(args.repeat) for a in alphas]
    write_stage("alpha1", {"best": best, "alphas": alphas, "repeat": args.repeat, "first_seed": args.first_seed},
                run_all(tasks, args.jobs, root))


def stage_flows(args: argparse.Namespace, root: Path, data: dict[str, Any]) -> None:
    """Two flows, FAST, each alpha its own run, for each candidate asked (all by default), around its own
    equilibrium estimate; the runs of candidates not asked are kept from the stage's file."""
    best, _, _ = fitted_one_flow(data)
    flows = int(data["fit"]["two_flow_alpha_per_flow"]["flows"])
    names = args.candidates or [c.name for c in CANDIDATES]
    if unknown := [n for n in names if n not in CANDIDATE]:
        raise SystemExit(f"--candidates: unknown {unknown} (known: {', '.join(CANDIDATE)})")
    kept = [r for r in read_stage("flows")["runs"] if r["candidate"] not in names] if stage_file("flows").is_file() \
        else []
    tasks, names_of = [], []
    for name in names:
        element = element_of(CANDIDATE[name], best["max_delay_ms"], best["knee"])
        for r in range(args.repeat):
            for a in alpha_grid(equilibrium_alpha(element, flows, 3.0)):
                tasks.append(timed(Task("alpha", "docsis", a, args.first_seed + r, flows=flows, element=element),
                                   args.duration, args.warmup))
                names_of.append(name)
    runs = [row | {"candidate": name} for row, name in zip(run_all(tasks, args.jobs, root), names_of, strict=True)]
    write_stage("flows", {"best": best, "repeat": args.repeat, "first_seed": args.first_seed}, kept + runs)


def fit(data: dict[str, Any]) -> int:
    """The fit from the stages' stored runs (nothing run): every candidate's figures and residuals, the one
    kept, and the fit file."""
    points = data["fit"]["docsis_mean_rtt_ms"]
    best, ranked, windows = fitted_one_flow(data)
    alpha1 = pd.DataFrame(read_stage("alpha1")["runs"])
    flows = pd.DataFrame(read_stage("flows")["runs"])
    print(f"stage 1: one flow, fixed windows, DOCSIS: {len(points)} published mean RTTs; (max_delay_ms, knee) "
          f"grid, residuals in half-widths of the published band ({int((~faithful(windows)).sum())} of "
          f"{len(windows)} runs unfaithful, left out):")
    print(ranked.to_string(index=False, float_format="{:.3f}".format))
    chosen = windows[(windows["max_delay_ms"] == best["max_delay_ms"]) & (windows["knee"] == best["knee"])]
    res = residuals(chosen[faithful(chosen)], points)
    print(f"\nbest: max_delay_ms {best['max_delay_ms']:g}, knee {best['knee']:g}; its residuals:")
    print(res.to_string(index=False, float_format="{:.2f}".format))
    table = candidate_table(windows, best, alpha1, flows, data)
    print("\nstage 2: the candidate forms at that point (alpha: the smallest per flow with >= 95 % utilization, "
          "from the median by alpha; residuals in half-widths of the published bands: one flow 13 (10-16), two "
          "flows 22 (18-26) per flow; total_2_over_1: two flows' total alpha over one flow's, published > 2):")
    for cand in CANDIDATES:
        print(f"  {cand.name:10s} k = {cand.flow_exponent:g}: {cand.reading}")
    print(table.to_string(index=False, float_format="{:.2f}".format))
    kept_name = keep(table)
    if kept_name is None:
        print("\nno candidate fits every published figure: nothing written")
        return 1
    kept_cand = CANDIDATE[kept_name]
    print(f"\nkept: {kept_name} (the smallest form that fits: {kept_cand.free_parameters} free parameters)")
    FIT_FILE.write_text(json.dumps({
        "element": "links.cable.policy.phantom (fastlab.define.schema.PhantomDelay)",
        "form": "D = max_delay_ms x min(1, u / knee) x N^flow_exponent",
        "best": best | {"flow_exponent": kept_cand.flow_exponent, "model": kept_cand.model, "candidate": kept_name},
        "window_ms": 1000.0, "grid": FIT_GRID,
        "fitted_to": f"{DATA.name}: fit.docsis_mean_rtt_ms (max_delay_ms, knee); fit.two_flow_alpha_per_flow "
                     "and fit.superlinear_total_queue (the flow term)",
        "stages": {stage: {k: v for k, v in read_stage(stage).items() if k != "runs"} | {
            "runs": len(read_stage(stage)["runs"])} for stage in ("windows", "alpha1", "flows")},
        "residuals": res.round(3).to_dict("records"), "ranked": ranked.round(4).to_dict("records"),
        "candidates": json.loads(table.round(3).to_json(orient="records")),
        "unfaithful_runs": int((~faithful(windows)).sum() + (~faithful(alpha1)).sum() + (~faithful(flows)).sum()),
    }, indent=1) + "\n")
    print(f"written: {FIT_FILE.relative_to(REPO)}")
    return 0


# --- predictions where the published figures are held back ---------------------------------------------

def prediction_conditions(data: dict[str, Any]) -> list[tuple[float, int]]:
    """(downstream Mb/s, flows) of every prediction: one flow at each held-back rate and at 3 Mb/s, then the
    held-back flow counts at 3 Mb/s."""
    held = data["held_back"]
    rates = sorted({*map(float, held["one_flow_downstream_mbps"]), float(data["path"]["downstream_mbps"])})
    return [(r, 1) for r in rates] + [(float(data["path"]["downstream_mbps"]), int(n))
                                      for n in held["flows_at_3_mbps"]]


def condition_name(downstream: float, flows: int) -> str:
    return f"{downstream:g}x{flows}"


def queue_ms(packets: float, downstream_mbps: float) -> float:
    """Packets of MTU at the downstream rate, in ms: the target queueing delay alpha x MTU / C."""
    return packets * PKT_BYTES * 8 / (downstream_mbps * 1e3)


def prediction_table(runs: pd.DataFrame, buffer_ms: float) -> pd.DataFrame:
    """Per condition: the alpha per flow that fills the downstream (median by alpha; each seed's), its target
    queueing delay per flow and in all, the authors' reading (the total target queue against the buffer),
    and the element's answer: whether the flows filled the link with the shaper's max-delay at `buffer_ms`,
    the CMTS's real queue and the RTT there."""
    out = []
    for (down, flows), rows in runs.groupby(["downstream_mbps", "flows"], sort=True):
        need = alpha_needed(rows)
        kept = rows[faithful(rows)]
        at = kept[kept["value"] == need.median] if need.median is not None else kept.iloc[0:0]
        best_util = float(kept.groupby("value")["utilization"].median().max()) if not kept.empty else math.nan
        total = flows * need.median if need.median is not None else math.nan
        out.append({
            "downstream_mbps": down, "flows": flows,
            "alpha_per_flow": need.median if need.median is not None else "none",
            "seeds": need.seeds_text(), "alphas_run": f"{int(rows['value'].min())}-{int(rows['value'].max())}",
            "target_ms_per_flow": queue_ms(need.median, down) if need.median is not None else math.nan,
            "total_queue_pkts": total, "total_queue_ms": queue_ms(total, down),
            "total_within_buffer": bool(queue_ms(total, down) <= buffer_ms) if total == total else False,
            "full_rate": bool(best_util >= FULL), "best_utilization": best_util,
            "cmts_queue_pkts": float(at["cmts_queue_pkts"].median()) if not at.empty else math.nan,
            "cmts_drops": int(at["cmts_drops"].max()) if not at.empty else 0,
            "rtt_ms": float(at["mean_rtt_ms"].median()) if not at.empty else math.nan,
            "equilibrium_estimate": equilibrium_alpha(effective_element("docsis", None), flows, down),
            "bracketed": need.bracketed, "unfaithful": need.unfaithful})
    return pd.DataFrame(out)


def predict(args: argparse.Namespace, root: Path, data: dict[str, Any]) -> int:
    """Live runs of the fitted element (the topology's own) at every prediction condition asked (all by
    default); the runs of conditions not asked are kept from the stored file; the table of them all is
    printed and stored beside the runs."""
    conditions = prediction_conditions(data)
    names = args.conditions or [condition_name(*c) for c in conditions]
    known = {condition_name(*c): c for c in conditions}
    if unknown := [n for n in names if n not in known]:
        raise SystemExit(f"--conditions: unknown {unknown} (known: {', '.join(known)})")
    runs_file = PREDICT_DIR / "runs.json"
    stored = json.loads(runs_file.read_text())["runs"] if runs_file.is_file() else []
    kept = [r for r in stored if condition_name(r["downstream_mbps"], r["flows"]) not in names]
    tasks = []
    for name in names:
        down, flows = known[name]
        centre = equilibrium_alpha(effective_element("docsis", None), flows, down)
        tasks += [timed(Task("alpha", "docsis", a, args.first_seed + r, downstream_mbps=down, flows=flows),
                        args.duration, args.warmup)
                  for r in range(args.repeat) for a in alpha_grid(centre)]
    runs = kept + run_all(tasks, args.jobs, root)
    PREDICT_DIR.mkdir(parents=True, exist_ok=True)
    element = PhantomDelay(model="calibrated_flow_delay").model_dump()
    runs_file.write_text(json.dumps({"element": element, "repeat": args.repeat, "runs": runs}, indent=1,
                                    default=str) + "\n")
    buffer_ms = float(data["out_of_sample"]["authors_flow_limit"]["buffer_ms"])
    text = prediction_text(pd.DataFrame(runs), element, buffer_ms)
    (PREDICT_DIR / "predictions.txt").write_text(text + "\n")
    print(text)
    print(f"written: {runs_file.relative_to(REPO)}, {(PREDICT_DIR / 'predictions.txt').relative_to(REPO)}")
    return 0


def prediction_text(runs: pd.DataFrame, element: dict[str, Any], buffer_ms: float) -> str:
    """The printed predictions: the element, then one line per condition."""
    table = prediction_table(runs, buffer_ms)
    head = (f"Predictions of the calibrated element (D = {element['max_delay_ms']:g} ms x min(1, u / "
            f"{element['knee']:g}) x N^{element['flow_exponent']:g}), made without fitting to them: live runs, "
            f"each alpha its own run, {int(runs['seed'].nunique())} seed(s) a condition; alpha per flow = the "
            f"smallest with >= {FULL:.0%} utilization (median by alpha; each seed's own after it); target = "
            f"alpha x {PKT_BYTES} B / C; total = flows x that; 'within {buffer_ms:g}' is the authors' reading "
            f"(the total target queue must fit the CMTS's {buffer_ms:g} ms shaping buffer); 'full' is the "
            f"element's answer (the flows filled the downstream with the shaper's max-delay at {buffer_ms:g} "
            "ms); CMTS queue and RTT at the alpha needed; estimate = FAST's equilibrium with the element's "
            "delay, for comparison (not a result).")
    return head + "\n" + table.to_string(index=False, float_format="{:.2f}".format)


# --- the experiments -----------------------------------------------------------------------------------

def per_seed_smallest_alpha(table: pd.DataFrame, link: str) -> str:
    """How many seeds give each smallest full alpha (each seed's runs over the alphas on their own), e.g.
    "12: 9, 14: 1": the spread a single seed's verdict would have."""
    return alpha_needed(table[table["link"] == link]).seeds_text()


def experiments(args: argparse.Namespace, root: Path, data: dict[str, Any]) -> dict[str, Any]:
    dump: dict[str, Any] = {}
    for downstream in args.downstream:
        note = f"{args.flows} flow(s), downstream {downstream:g} Mb/s"
        if args.only != "alpha":
            tasks = [timed(Task("window", link, w, args.first_seed + r, downstream, args.flows), args.duration,
                           args.warmup)
                     for r in range(args.repeat) for w in args.windows for link in args.links]
            table = pd.DataFrame(run_all(tasks, args.jobs, root))
            med = faithful_only(table, "fixed windows").groupby(["value", "link"], sort=True)[
                ["goodput_mbps", "utilization", "mean_rtt_ms", "min_rtt_ms", "idle_rtt_ms"]].median().reset_index()
            med = med.rename(columns={"value": "window"})
            med["published_mean_rtt"] = [published_rtt(link, w, data) if args.flows == 1 and downstream == 3.0
                                         else "-" for link, w in zip(med["link"], med["window"], strict=True)]
            med["first_principles_ms"] = [
                simple_physical_rtt_ms(w, idle, downstream) if link == "simple" and args.flows == 1 else math.nan
                for link, w, idle in zip(med["link"], med["window"], med["idle_rtt_ms"], strict=True)]
            med["w_over_rtt_mbps"] = args.flows * med["window"] * PKT_BYTES * 8 / 1e3 / med["mean_rtt_ms"]
            print(f"fixed windows (Reno held at w), {note}, medians of {args.repeat} run(s):")
            print(med.to_string(index=False, float_format="{:.2f}".format))
            dump[f"windows {note}"] = table.to_dict("records")
        if args.only != "windows":
            tasks = [timed(Task("alpha", link, a, args.first_seed + r, downstream, args.flows), args.duration,
                           args.warmup)
                     for r in range(args.repeat) for a in args.alphas for link in args.links]
            table = pd.DataFrame(run_all(tasks, args.jobs, root))
            med = faithful_only(table, "FAST alphas").groupby(["value", "link"], sort=True)[
                ["utilization", "mean_rtt_ms", "cwnd_mean", "cmts_queue_pkts"]].median()
            print(f"\nFAST alpha (per flow), each alpha its own run, {note}, medians of {args.repeat} run(s):")
            print(med.reset_index().rename(columns={"value": "alpha"}).to_string(
                index=False, float_format="{:.2f}".format))
            for link in args.links:
                need = alpha_needed(table[table["link"] == link])
                print(f"{link}: smallest alpha per flow with >= {FULL:.0%} utilization: {need.median} "
                      f"{published_alpha(link, args.flows, downstream, data)}")
                print(f"  each seed's own: {need.seeds_text()}")
            dump[f"alphas {note}"] = table.to_dict("records")
    return dump


def published_alpha(link: str, flows: int, downstream: float, data: dict[str, Any]) -> str:
    """The published figure (or band) for the smallest full alpha of a condition, as a note."""
    if downstream != float(data["path"]["downstream_mbps"]):
        return "(held back: bench/docsis.py --predict)"
    one = data["out_of_sample"]["alpha_for_full"].get(link)
    if flows == 1 and one:
        return f"(published about {one['value']}, band {one['low']}-{one['high']})"
    two = data["fit"]["two_flow_alpha_per_flow"]
    if flows == two["flows"] and link == "docsis":
        return f"(published {two['value']}, band {two['low']}-{two['high']})"
    if flows == two["flows"] and link == "simple":
        simple = data["out_of_sample"]["alpha_for_full"]["simple"]
        share = data["out_of_sample"]["simple_two_flow_alpha_share"]["value"]
        return f"(published: halves, about {simple['value'] * share:g} from one flow's {simple['value']})"
    return "(no published figure)"


def published_rtt(link: str, w: int, data: dict[str, Any]) -> str:
    if link == "simple":
        return f"{simple_mean_rtt_ms(w, data):.0f}"
    if link == "docsis":
        point = next((p for p in data["fit"]["docsis_mean_rtt_ms"] if p["window"] == w), None)
        return f"{point['low']:g}-{point['high']:g}" if point else "-"
    return "-"


# --- the aggregate plots: emulated beside published (pure) ------------------------------------------------

LINK_COLOURS = {"docsis": "#1f77b4", "simple": "#2ca02c", "docsis-off": "#ff7f0e"}
LINK_MARKERS = {"docsis": "circle", "simple": "square", "docsis-off": "diamond-open"}


def runs_of(dumps: list[dict[str, Any]], kind: str) -> pd.DataFrame:
    """Every run of `kind` ("window" or "alpha") in the --json dumps, one row each (all conditions)."""
    rows = [row for dump in dumps for records in dump.values() for row in records if row.get("kind") == kind]
    table = pd.DataFrame(rows)
    if not table.empty and "flows" not in table:
        table["flows"] = 1  # dumps written before runs recorded their flow count: one flow
    return table.fillna({"flows": 1}) if not table.empty else table


def aggregate(table: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """Median, min and max of `columns` per (link, downstream, value) over the faithful runs only (an
    unfaithful run proves nothing either way), with the count of runs and of unfaithful ones."""
    keys = ["link", "downstream_mbps", "flows", "value"]
    out = table[faithful(table)].groupby(keys)[columns].agg(["median", "min", "max"])
    out.columns = [f"{c}_{s}" for c, s in out.columns]
    counts = table.assign(unfaithful=~faithful(table)).groupby(keys).agg(runs=("faithful", "size"),
                                                                         unfaithful=("unfaithful", "sum"))
    return out.join(counts, how="outer").reset_index()


def plot_html(dumps: list[dict[str, Any]], data: dict[str, Any]) -> str:
    """Four panels, the study's published figures drawn beside the emulated medians (bars: min to max of the
    faithful runs): throughput and RTTs against the fixed window, utilization and FAST's own window against
    alpha. A self-contained HTML page (plotly inline: no network)."""
    import plotly.graph_objects as go
    import plotly.io as pio
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=2, cols=2, subplot_titles=(
        "fixed window: utilization of the downstream", "fixed window: mean (solid) and minimum (dotted) RTT",
        "FAST, each alpha its own run: utilization", "FAST, each alpha its own run: its own window"))
    ref = data["out_of_sample"]
    windows, alphas = runs_of(dumps, "window"), runs_of(dumps, "alpha")
    if not windows.empty:
        agg = aggregate(windows, ["utilization", "mean_rtt_ms", "min_rtt_ms"])
        for (link, down, flows), rows in agg.groupby(["link", "downstream_mbps", "flows"]):
            name, colour = f"{link} {down:g} Mb/s {flows:g} flow(s)", LINK_COLOURS.get(str(link), "#888")
            dash = "solid" if down == 3.0 else "dash"
            for col, row, key, line in ((1, 1, "utilization", dash), (2, 1, "mean_rtt_ms", dash),
                                        (2, 1, "min_rtt_ms", "dot")):
                fig.add_trace(go.Scatter(
                    x=rows["value"], y=rows[f"{key}_median"], mode="lines+markers", name=f"{name} {key}",
                    line={"color": colour, "dash": line}, legendgroup=name,
                    marker={"symbol": LINK_MARKERS.get(str(link), "circle"), "size": 9},
                    error_y={"type": "data", "symmetric": False, "array": rows[f"{key}_max"] - rows[f"{key}_median"],
                             "arrayminus": rows[f"{key}_median"] - rows[f"{key}_min"]}), row=row, col=col)
        full = ref["docsis_full_rate_window"]
        fig.add_vrect(x0=full["low"], x1=full["high"], fillcolor=LINK_COLOURS["docsis"], opacity=0.12, line_width=0,
                      annotation_text="published: DOCSIS full by w 38-42", row=1, col=1)
        band = data["fit"]["docsis_mean_rtt_ms"]
        fig.add_shape(type="rect", x0=band[0]["window"], x1=band[-1]["window"], y0=band[0]["low"], y1=band[0]["high"],
                      fillcolor=LINK_COLOURS["docsis"], opacity=0.12, line_width=0, row=1, col=2)
        fig.add_annotation(x=(band[0]["window"] + band[-1]["window"]) / 2, y=band[0]["high"], showarrow=False,
                           text="published: DOCSIS mean RTT 130-160 ms, w 20-38 (fitted)", row=1, col=2)
        ws = sorted(windows["value"].unique())
        simple = [simple_mean_rtt_ms(w, data) for w in ws]
        tol = ref["simple_mean_rtt_ms"]["tolerance_ms"]
        fig.add_trace(go.Scatter(x=ws, y=simple, mode="lines", name="published: simple 100 + max(0, w-25) x 4 ms",
                                 line={"color": "#000", "dash": "dash"},
                                 error_y={"type": "constant", "value": tol}), row=1, col=2)
        simple_runs = windows[(windows["link"] == "simple") & (windows["downstream_mbps"] == 3.0)]
        idle = simple_runs["idle_rtt_ms"].median() if "idle_rtt_ms" in simple_runs else math.nan
        if idle == idle:  # the simple link's runs give the hosts' share: the first-principles line beside
            fig.add_trace(go.Scatter(x=ws, y=[simple_physical_rtt_ms(w, idle, 3.0) for w in ws], mode="lines",
                                     name="simple, first principles (not fitted)",
                                     line={"color": LINK_COLOURS["simple"], "dash": "dashdot", "width": 1}),
                          row=1, col=2)
        rate = [min(1.0, w * PKT_BYTES * 8 / (rtt / 1000) / 3e6) for w, rtt in zip(ws, simple, strict=True)]
        fig.add_trace(go.Scatter(x=ws, y=rate, mode="lines", name="published: simple w x 1500 B / mean RTT",
                                 line={"color": "#000", "dash": "dash"}), row=1, col=1)
    if not alphas.empty:
        agg = aggregate(alphas, ["utilization", "cwnd_mean"])
        for (link, down, flows), rows in agg.groupby(["link", "downstream_mbps", "flows"]):
            name, colour = f"{link} {down:g} Mb/s {flows:g} flow(s) FAST", LINK_COLOURS.get(str(link), "#888")
            for col, key in ((1, "utilization"), (2, "cwnd_mean")):
                fig.add_trace(go.Scatter(
                    x=rows["value"], y=rows[f"{key}_median"], mode="lines+markers", name=f"{name} {key}",
                    line={"color": colour, "dash": "solid" if down == 3.0 else "dash"}, legendgroup=name,
                    marker={"symbol": LINK_MARKERS.get(str(link), "circle"), "size": 9},
                    error_y={"type": "data", "symmetric": False, "array": rows[f"{key}_max"] - rows[f"{key}_median"],
                             "arrayminus": rows[f"{key}_median"] - rows[f"{key}_min"]}), row=2, col=col)
        for (link, band), where in zip(ref["alpha_for_full"].items(), ("bottom left", "top left"), strict=False):
            fig.add_vrect(x0=band["low"], x1=band["high"], fillcolor=LINK_COLOURS[link], opacity=0.12, line_width=0,
                          annotation_text=f"published: {link}<br>full from alpha ~{band['value']}",
                          annotation_position=where, row=2, col=1)
        fig.add_hline(y=FULL, line_dash="dot", line_color="#888", row=2, col=1)
    fig.update_xaxes(title_text="window (packets)", row=1)
    fig.update_xaxes(title_text="alpha (packets)", row=2)
    fig.update_xaxes(rangemode="tozero")
    fig.update_yaxes(title_text="utilization", col=1)
    fig.update_yaxes(title_text="RTT (ms)", row=1, col=2)
    fig.update_yaxes(title_text="cwnd (packets)", row=2, col=2)
    fig.update_layout(height=900, width=1400, title=(
        "DOCSIS (sourced MAC + calibrated element), the mechanisms alone (docsis-off) and the simple link<br>"
        "<sup>emulated medians (bars: min-max of the faithful runs) beside the published figures (Atov et al., "
        "TENCON 2005; shaded: the published bands)</sup>"))
    return pio.to_html(fig, include_plotlyjs=True, full_html=True)


def csv_list(kind: type) -> Any:
    return lambda text: [kind(v) for v in text.split(",") if v.strip()]


STAGES = {"windows": stage_windows, "alpha1": stage_alpha1, "flows": stage_flows}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--fit", action="store_true", help="the fit from the stages' stored runs (writes the fit file)")
    what.add_argument("--fit-stage", choices=list(STAGES), help="run one stage of the fit (stores its runs)")
    what.add_argument("--predict", action="store_true", help="the element's predictions, held-back conditions")
    parser.add_argument("--candidates", type=csv_list(str), help="--fit-stage flows: only these candidates")
    parser.add_argument("--conditions", type=csv_list(str), help="--predict: only these (e.g. 0.5x1,3x6)")
    parser.add_argument("--windows", type=csv_list(int), default=csv_list(int)("5,10,15,20,25,28,30,35,38,42,45"))
    parser.add_argument("--alphas", type=csv_list(int), default=csv_list(int)("1,2,3,4,5,6,8,10,12,14,16,20,25,35"))
    parser.add_argument("--links", type=csv_list(str), default=["simple", "docsis", "docsis-off"])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--first-seed", type=int, default=1, help="seeds first-seed .. first-seed + repeat - 1 "
                        "(more seeds for a condition whose runs came out unfaithful)")
    parser.add_argument("--duration", type=float, default=20.0, help="seconds per run (at least; see RUN_RTTS)")
    parser.add_argument("--warmup", type=float, default=6.0, help="seconds left out of every figure (at least)")
    parser.add_argument("--only", choices=("windows", "alpha"))
    parser.add_argument("--flows", type=int, default=1)
    parser.add_argument("--downstream", type=csv_list(float), default=[3.0], help="downstream Mb/s")
    parser.add_argument("--jobs", type=int, default=1, help="runs at once (each its own process and verdict)")
    parser.add_argument("--json", help="write every run's figures here")
    parser.add_argument("--plot", help="write the aggregate plots (HTML) of this run's figures, or of --from's")
    parser.add_argument("--from", dest="from_json", type=csv_list(str),
                        help="plot these --json files instead of running anything")
    args = parser.parse_args()
    if unknown := [link for link in args.links if link not in LINKS]:
        parser.error(f"--links: unknown {unknown} (known: {', '.join(LINKS)})")
    if not 1 <= args.jobs <= 8:
        parser.error("--jobs: 1 to 8")
    pd.set_option("display.width", 250)
    data = published()
    if args.from_json:
        if not args.plot:
            parser.error("--from: give --plot FILE too")
        Path(args.plot).write_text(plot_html([json.loads(Path(f).read_text()) for f in args.from_json], data))
        print(f"written: {args.plot}")
        return 0
    if args.fit:
        return fit(data)
    root = Path(tempfile.mkdtemp(prefix="fastlab-docsis-"))
    fast = args.jobs > 1 and (args.predict or args.fit_stage in ("alpha1", "flows") or
                              (not args.fit_stage and args.only != "windows"))
    with fast_registered(fast):
        if args.fit_stage:
            STAGES[args.fit_stage](args, root, data)
            return 0
        if args.predict:
            return predict(args, root, data)
        dump = experiments(args, root, data)
    if args.json:
        Path(args.json).write_text(json.dumps(dump, indent=1, default=str))
    if args.plot:
        Path(args.plot).write_text(plot_html([dump], data))
    print(json.dumps({"duration_s": args.duration, "warmup_s": args.warmup, "repeat": args.repeat,
                      "runs": str(root)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
