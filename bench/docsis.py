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

The fit of the calibrated element and its predictions (`--fit-stage`, `--fit`, `--predict`) are
bench/docsis_fit.py's; one run and its figures are bench/docsis_runs.py's (`--jobs N` runs at once:
see there).

Default: fixed windows (`--windows`) and FAST alphas (`--alphas`, each alpha its own run) on the links
asked (`--links`), `--repeat` seeds each, `--flows` flows: medians, the published figure beside each,
the smallest alpha with >= 95 % utilization per link against the published band.

`--plot FILE.html` (with `--from a.json,b.json` to draw saved `--json` dumps without running): the
aggregate plots -- utilization and mean/minimum RTT against the fixed window, utilization and FAST's own
window against alpha -- emulated medians with their min-max over the faithful runs, the published
figures and bands beside them. Medians everywhere leave unfaithful runs out (and say how many).

Run as root: `sudo .venv/bin/python bench/docsis.py [--fit | --fit-stage S | --predict [--conditions C,...]
[--stored]] [--windows 5,10,...] [--alphas 1,2,...] [--links simple,docsis,docsis-off] [--repeat N]
[--first-seed N] [--jobs N] [--duration S] [--warmup S] [--only windows|alpha] [--flows N] [--downstream 1,2,3]
[--json FILE] [--plot FILE.html [--from JSON,...]]`.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.docsis_runs import (  # noqa: E402
    FULL,
    LINKS,
    PKT_BYTES,
    Task,
    alpha_needed,
    faithful,
    faithful_only,
    fast_registered,
    published,
    run_all,
    timed,
)


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


FIT_STAGES = ["windows", "alpha1", "flows"]  # bench/docsis_fit.py's STAGES (a unit test holds them equal)


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
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--fit", action="store_true", help="the fit from the stages' stored runs (writes the fit file)")
    what.add_argument("--fit-stage", choices=FIT_STAGES, help="run one stage of the fit (stores its runs)")
    what.add_argument("--predict", action="store_true", help="the element's predictions, held-back conditions")
    parser.add_argument("--candidates", type=csv_list(str), help="--fit-stage flows: only these candidates")
    parser.add_argument("--conditions", type=csv_list(str), help="--predict: only these (e.g. 0.5x1,3x6)")
    parser.add_argument("--stored", action="store_true", help="--predict: the table of the stored runs, run nothing")
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
    if args.fit or args.fit_stage or args.predict:
        from bench import docsis_fit  # the fit and the predictions, on the runs of bench/docsis_runs.py
    if args.fit:
        return docsis_fit.fit(data)
    if args.predict and args.stored:
        return docsis_fit.predict(args, Path(), data)  # reads the stored runs only
    root = Path(tempfile.mkdtemp(prefix="fastlab-docsis-"))
    fast = args.jobs > 1 and (args.predict or args.fit_stage in ("alpha1", "flows") or
                              (not args.fit_stage and args.only != "windows"))
    with fast_registered(fast):
        if args.fit_stage:
            docsis_fit.STAGES[args.fit_stage](args, root, data)
            return 0
        if args.predict:
            return docsis_fit.predict(args, root, data)
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
