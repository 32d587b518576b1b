"""DOCSIS calibration: the emulated cable path against the study it reproduces, side by side, and the fit
of the calibrated phantom element.

The study (Atov, Andrew, Kennedy, Wydrowski, TENCON 2005: a real Cisco CMTS and cable modem, 3 Mb/s
down / 512 kb/s up, 100 ms of base RTT, 1500-byte packets) measured throughput, mean RTT and minimum
RTT against a *fixed* window (here `max_cwnd_pkts`: Reno held at w, below the path's BDP + buffer
nothing is lost, so the window stays at w), and the smallest FAST alpha that fills the downstream, on
DOCSIS and on a simple link of the same capacities. Its figures, as fastlab's design brief states them
(not digitised here), are in bench/data/atov2005.yaml: `fit` holds the ones the phantom element is
fitted to (one flow, fixed windows, DOCSIS mean RTT), `out_of_sample` what is only ever compared.

Three links: `simple`, `docsis` (the sourced MAC and shaper plus the calibrated element) and
`docsis-off` (the sourced mechanisms alone, `phantom: off`).

- `--fit`: runs the fixed windows of `fit` on `docsis` for every (max_delay_ms, knee) of a grid,
  prints each point's residuals against the published mean RTTs (in units of the band's half-width),
  and writes the best point to bench/data/docsis-phantom-fit.json -- the source of
  fastlab.define.schema.PHANTOM_FIT_* (a unit test holds them to it).
- default: fixed windows (`--windows`) and FAST alphas (`--alphas`, each alpha its own run) on the
  links asked (`--links`), `--repeat` seeds each: medians, the published figure beside each, the
  smallest alpha with >= 95 % utilization per link against the published band.
- `--flows 2`, `--downstream 1,2,3`: the same experiments off the fitted conditions: what the
  calibrated model predicts there, printed, never fitted.
- `--jobs N`: N runs at once, each in its own process with its own run-scoped network and emulators and
  its own fidelity verdict (a run made unfaithful by a neighbour says so and is left out). A 3 Mb/s run
  keeps ~20 % of one core busy (measured: 3.5 s of CPU in a 19-s run), so 4 at once stay far inside
  this 2-core machine. FAST is registered once by the bench before the runs start (so no run owns it
  and none unregisters it under another) and unregistered at the end if the bench registered it.
  Caveat: runs at once share FAST's event ring buffer, so a run's CC event log may miss events the
  other runs consumed; no figure here is read from the events.
- `--plot FILE.html` (with `--from a.json,b.json` to draw saved `--json` dumps without running): the
  aggregate plots -- utilization and mean/minimum RTT against the fixed window, utilization and FAST's own
  window against alpha -- emulated medians with their min-max over the faithful runs, the published
  figures and bands beside them. Medians everywhere leave unfaithful runs out (and say how many).

Measured per run, after --warmup seconds: goodput (bytes acked over time); for the fixed windows the
mean and the minimum of every RTT sample the kernel took (one per ACK, `rtt_samples.csv`); for FAST the
mean srtt. Run as root: `sudo .venv/bin/python bench/docsis.py [--fit] [--windows 5,10,...]
[--alphas 1,2,...] [--links simple,docsis,docsis-off] [--repeat N] [--first-seed N] [--jobs N]
[--duration S] [--only windows|alpha]
[--flows N] [--downstream 1,2,3] [--json FILE] [--plot FILE.html [--from JSON,...]]`.
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
PKT_BYTES = 1500
PAYLOAD_SHARE = 1448 / 1500  # TCP payload of a 1500-byte packet, timestamps on
FULL = 0.95  # "full utilization"
LINKS = {"simple": {"mode": "simple"}, "docsis": {"mode": "docsis"},
         "docsis-off": {"mode": "docsis", "phantom": "off"}}
FIT_GRID = {"max_delay_ms": [30.0, 35.0, 40.0, 45.0, 50.0], "knee": [0.3, 0.5, 0.7]}


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


def spec_for(link: str, duration_s: float, seed: int, flow: dict[str, Any], name: str, count: int = 1,
             downstream_mbps: float = 3.0, phantom: dict[str, float] | None = None) -> Any:
    args = dict(LINKS[link]) | {"downstream_mbps": downstream_mbps}
    spec: dict[str, Any] = {"name": name, "topology": "docsis", "topology_args": args, "duration_s": duration_s,
                            "seed": seed, "switch": "bridge", "idle_pings": 3,
                            "flows": [{"src": "server", "dst": "client", "count": count, **flow}]}
    if phantom is not None:  # the topology's own downstream shaper, with these phantom parameters
        shaper = build_plan("docsis", args).shaped["cable"].profile.policy
        assert shaper is not None
        element = PhantomDelay(model="calibrated_load_delay", **phantom)
        spec["links"] = {"cable": {"policy": shaper.model_copy(update={"phantom": element}).model_dump()}}
    return parse_spec(spec)


def steady_figures(out: Path, warmup_s: float, downstream_mbps: float) -> dict[str, Any]:
    """Goodput, utilization and RTTs of a run after the warm-up (every flow together)."""
    folder = RunFolder(out)
    flows = folder.flows()
    steady = flows[flows["t"] >= warmup_s]
    mbps = steady_goodput_mbps(flows, warmup_s)
    summary = folder.summary()
    idle = next((p.min_ms for p in summary.idle_rtt if p.min_ms), math.nan)
    figures = {"goodput_mbps": mbps, "utilization": mbps / (downstream_mbps * PAYLOAD_SHARE),
               "mean_rtt_ms": float(steady["srtt_ms"].mean()), "min_rtt_ms": math.nan, "idle_rtt_ms": idle,
               "cwnd_mean": float(steady["cwnd_pkts"].mean()),
               "faithful": bool(summary.faithful)}
    if folder.has(RTT_SAMPLES):  # per-packet RTTs of a clamped flow
        rtts = folder.rtt_samples()
        rtts = rtts[rtts["t"] >= warmup_s]
        figures["mean_rtt_ms"] = float((rtts["mean_rtt_ms"] * rtts["samples"]).sum() / rtts["samples"].sum())
        figures["min_rtt_ms"] = float(rtts["min_rtt_ms"].min())
    return figures


def run(kind: str, link: str, value: int, seed: int, args: argparse.Namespace, root: Path,
        phantom: dict[str, float] | None = None, downstream_mbps: float = 3.0) -> dict[str, Any]:
    """One run: a window held at `value` (kind "window") or FAST with alpha `value` (kind "alpha")."""
    flow = ({"cc": "reno", "max_cwnd_pkts": value} if kind == "window" else
            {"cc": "fast", "cc_args": {"alpha": value}})
    tag = "-".join(f"{k}{v:g}" for k, v in (phantom or {}).items())
    out = root / f"{kind}-{link}-{value}-{seed}-{args.flows}f-{downstream_mbps:g}M{tag}"
    run_experiment(spec_for(link, args.duration, seed, flow, f"docsis-{kind}{value}-{link}", args.flows,
                            downstream_mbps, phantom), out=out)
    return {"kind": kind, "link": link, "value": value, "seed": seed, "downstream_mbps": downstream_mbps,
            "flows": args.flows,
            **(phantom or {}), **steady_figures(out, args.warmup, downstream_mbps)}


Task = tuple[str, str, int, int, dict[str, float] | None, float]  # kind, link, value, seed, phantom, downstream


def _run_task(task: Task, args: argparse.Namespace, root: Path) -> dict[str, Any]:
    kind, link, value, seed, phantom, downstream = task
    return run(kind, link, value, seed, args, root, phantom, downstream)


def run_all(tasks: list[Task], args: argparse.Namespace, root: Path) -> list[dict[str, Any]]:
    """Every task's figures, in the tasks' order: one at a time, or `--jobs` at once (see the docstring)."""
    if args.jobs <= 1:
        return [_run_task(t, args, root) for t in tasks]
    # spawn, not fork: each worker imports fastlab afresh (no Mininet or thread state copied from here)
    with ProcessPoolExecutor(max_workers=args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        return list(pool.map(_run_task, tasks, [args] * len(tasks), [root] * len(tasks)))


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


def fit(args: argparse.Namespace, root: Path, data: dict[str, Any]) -> int:
    points = data["fit"]["docsis_mean_rtt_ms"]
    windows = [int(p["window"]) for p in points]
    tasks: list[Task] = [("window", "docsis", w, args.first_seed + r, {"max_delay_ms": d, "knee": k}, 3.0)
                         for d, k in itertools.product(FIT_GRID["max_delay_ms"], FIT_GRID["knee"])
                         for r in range(args.repeat) for w in windows]
    table = pd.DataFrame(run_all(tasks, args, root))
    best, ranked = best_fit(table, points)
    print(f"fit of the phantom element to {len(points)} published mean RTTs (one flow, fixed window, DOCSIS), "
          f"{args.repeat} run(s) a point; residuals in half-widths of the published band:")
    print(ranked.to_string(index=False, float_format="{:.3f}".format))
    chosen = table[(table["max_delay_ms"] == best["max_delay_ms"]) & (table["knee"] == best["knee"])]
    res = residuals(chosen, points)
    print(f"\nbest: max_delay_ms {best['max_delay_ms']:g}, knee {best['knee']:g}; its residuals:")
    print(res.to_string(index=False, float_format="{:.2f}".format))
    unfaithful = int((~table["faithful"]).sum())
    FIT_FILE.write_text(json.dumps({
        "element": "links.cable.policy.phantom (fastlab.define.schema.PhantomDelay)", "best": best,
        "window_ms": 1000.0, "grid": FIT_GRID, "repeat": args.repeat, "duration_s": args.duration,
        "warmup_s": args.warmup, "fitted_to": f"{DATA.name}: fit.docsis_mean_rtt_ms",
        "residuals": res.round(3).to_dict("records"), "ranked": ranked.round(4).to_dict("records"),
        "unfaithful_runs": unfaithful}, indent=1) + "\n")
    print(f"written: {FIT_FILE.relative_to(REPO)} ({unfaithful} of {len(table)} runs unfaithful)")
    return 0


# --- the experiments -----------------------------------------------------------------------------------

def smallest_full_alpha(util: pd.Series) -> int | None:
    """The smallest alpha from which every larger one measured gives >= FULL (medians by alpha)."""
    alphas = sorted(util.index)
    for i, a in enumerate(alphas):
        if all(util[b] >= FULL for b in alphas[i:]):
            return int(a)
    return None


def per_seed_smallest_alpha(table: pd.DataFrame, link: str) -> str:
    """How many seeds give each smallest full alpha (each seed's runs over the alphas on their own), e.g.
    "12: 9 seeds, 14: 1 seed": the spread a single seed's verdict would have."""
    rows = table[table["link"] == link]
    found = [smallest_full_alpha(seed_rows.set_index("value")["utilization"]) for _s, seed_rows in rows.groupby("seed")]
    counts = pd.Series([-1 if f is None else f for f in found]).value_counts().sort_index()
    return ", ".join(f"{'none' if a == -1 else a}: {n} seed{'s' if n > 1 else ''}" for a, n in counts.items())


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


def experiments(args: argparse.Namespace, root: Path, data: dict[str, Any]) -> dict[str, Any]:
    dump: dict[str, Any] = {}
    for downstream in args.downstream:
        note = f"{args.flows} flow(s), downstream {downstream:g} Mb/s"
        if args.only != "alpha":
            tasks: list[Task] = [("window", link, w, args.first_seed + r, None, downstream)
                                 for r in range(args.repeat) for w in args.windows for link in args.links]
            table = pd.DataFrame(run_all(tasks, args, root))
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
            tasks = [("alpha", link, a, args.first_seed + r, None, downstream)
                     for r in range(args.repeat) for a in args.alphas for link in args.links]
            table = pd.DataFrame(run_all(tasks, args, root))
            med = faithful_only(table, "FAST alphas").groupby(["value", "link"], sort=True)[
                ["utilization", "mean_rtt_ms", "cwnd_mean"]].median()
            print(f"\nFAST alpha, each alpha its own run, {note}, medians of {args.repeat} run(s):")
            print(med.reset_index().rename(columns={"value": "alpha"}).to_string(
                index=False, float_format="{:.2f}".format))
            for link in args.links:
                util = med.xs(link, level="link")["utilization"]
                found = smallest_full_alpha(util)
                band = data["out_of_sample"]["alpha_for_full"].get(link.split("-")[0] if link != "docsis-off"
                                                                   else "none")
                said = (f"(published about {band['value']}, band {band['low']}-{band['high']})"
                        if band and args.flows == 1 and downstream == 3.0 else "(prediction: no published figure)")
                print(f"{link}: smallest alpha with >= {FULL:.0%} utilization: {found} {said}")
                print(f"  each seed's own: {per_seed_smallest_alpha(faithful_only(table, link), link)}")
            dump[f"alphas {note}"] = table.to_dict("records")
    return dump


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fit", action="store_true", help="fit the phantom element (writes the fit file)")
    parser.add_argument("--windows", type=csv_list(int), default=csv_list(int)("5,10,15,20,25,28,30,35,38,42,45"))
    parser.add_argument("--alphas", type=csv_list(int), default=csv_list(int)("1,2,3,4,5,6,8,10,12,14,16,20,25,35"))
    parser.add_argument("--links", type=csv_list(str), default=["simple", "docsis", "docsis-off"])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--first-seed", type=int, default=1, help="seeds first-seed .. first-seed + repeat - 1 "
                        "(more seeds for a condition whose runs came out unfaithful)")
    parser.add_argument("--duration", type=float, default=20.0, help="seconds per run")
    parser.add_argument("--warmup", type=float, default=6.0, help="seconds left out of every figure")
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
    pd.set_option("display.width", 220)
    data = published()
    if args.from_json:
        if not args.plot:
            parser.error("--from: give --plot FILE too")
        Path(args.plot).write_text(plot_html([json.loads(Path(f).read_text()) for f in args.from_json], data))
        print(f"written: {args.plot}")
        return 0
    root = Path(tempfile.mkdtemp(prefix="fastlab-docsis-"))
    if not 1 <= args.jobs <= 8:
        parser.error("--jobs: 1 to 8")
    with fast_registered(args.jobs > 1 and not args.fit and args.only != "windows"):
        if args.fit:
            return fit(args, root, data)
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
