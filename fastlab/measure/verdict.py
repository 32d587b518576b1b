"""The fidelity verdict's inputs, gathered from a run's plan, its emulators' final stats and its traces:
the routes and paths the flows took over the emulated links, the links' sampled counters for the
conservation check, the tc-shaped queues, and the verdict itself (`assess_run`, fastlab.measure.fidelity's
pure `assess` on them). Used by the engine at the end of a run and by bench/conservation.py on finished
runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from fastlab.base.record import FlowDelay, Summary, Verdict
from fastlab.base.rundir import EVENTS, SPEC, RunFolder
from fastlab.define.schema import load_spec
from fastlab.measure import accounting, fidelity, floors
from fastlab.plan.prepare import Prepared, prepare


def tc_queues(prep: Prepared, links_df: Any) -> dict[str, dict[str, tuple[int, list[tuple[float, float, float]]]]]:
    """Each tc-shaped link's sampled queue per direction, with its configured rate, for the verdict."""
    out: dict[str, dict[str, tuple[int, list[tuple[float, float, float]]]]] = {}
    tc = [k for k, (b, _) in prep.backends.items() if b != "emulator" and k in prep.links]
    if links_df.empty or not tc or not {"backlog_pkts", "tx_bytes"} <= set(links_df.columns):
        return out
    for link in tc:
        for direction in ("forward", "reverse"):
            rows = links_df[(links_df["link"] == link) & (links_df["direction"] == direction)]
            rows = rows.dropna(subset=["backlog_pkts", "tx_bytes"]).sort_values("t")
            if not rows.empty:
                rate = getattr(prep.links[link], direction).rate_bps
                out.setdefault(link, {})[direction] = (rate, list(zip(
                    rows["t"].astype(float), rows["backlog_pkts"].astype(float), rows["tx_bytes"].astype(float),
                    strict=True)))
    return out


def accounting_routes_of(prep: Prepared) -> list[accounting.FlowRoute]:
    """Each flow's hops for the delay accounting: its data's and its ACKs' shaped link directions in path
    order, with their delays, rates and backends (a tbf, DOCSIS or trace direction schedules a frame from the
    moment linkemu reads it, so its socket wait counts as lateness)."""
    def hop(link: str, forward: bool) -> accounting.Hop:
        d = getattr(prep.links[link], "forward" if forward else "reverse")
        return accounting.Hop(link, "forward" if forward else "reverse", d.delay_us / 1000, d.rate_bps,
                              emulated=prep.backends.get(link, ("", ""))[0] == "emulator",
                              reads_late_count=d.policy is not None or d.trace is not None)

    return [accounting.FlowRoute(f.id, tuple(hop(*c) for c in p.data), tuple(hop(*c) for c in p.acks),
                                 prep.spec.mtu)
            for f in prep.flows for p in (prep.paths[f.id],)]


@dataclass(frozen=True)
class RunAccounts:
    """A run's delay accounting, made once from its traces: each flow's route, its accounting by sample
    (fastlab.measure.accounting), its algorithm's own RTTs (algorithm_rtts) and the base check's zero
    (fastlab.measure.floors) -- the engine's summary and its verdict (assess_run), and judge_again, read them."""

    routes: dict[str, accounting.FlowRoute]
    accounts: dict[str, pd.DataFrame]
    own_rtts: dict[str, pd.DataFrame]
    floors: dict[str, float]


def account_run(prep: Prepared, flows_df: pd.DataFrame, links_df: pd.DataFrame,
                hop_flows: pd.DataFrame | None = None, events_df: pd.DataFrame | None = None) -> RunAccounts:
    """Every flow's delay accounting from the run's traces (flows.csv's rows without the accounting's columns,
    links.csv, hop_flows.csv and the algorithms' events), its hops' series built once for it and the floors."""
    routes = accounting_routes_of(prep)
    series = accounting.run_series(routes, links_df, hop_flows)
    own_rtts = algorithm_rtts(flows_df, events_df)
    zero = floors.queue_floors(routes, flows_df, links_df, base_sent=floors.base_windows(own_rtts), series=series)
    return RunAccounts({r.flow: r for r in routes}, accounting.account(routes, flows_df, links_df, series=series),
                       own_rtts, zero)


def hop_flows_of(prep: Prepared, samples: pd.DataFrame) -> pd.DataFrame:
    """The emulators' per-flow samples with each 4-tuple named by its flow (its receiver's address and port)."""
    return accounting.resolve_hop_flows(samples, {(f.dst_ip, f.port): f.id for f in prep.flows})


def _crossing_rows(links_df: pd.DataFrame, columns: list[str],
                   keep: Callable[[str], bool] = lambda _link: True) -> dict[fidelity.Crossing, pd.DataFrame]:
    """Each link direction's samples of `columns` (with t) from links.csv, sorted by time, for the links `keep`
    takes; none where links.csv lacks a column, directions with no sample of them left out."""
    out: dict[fidelity.Crossing, pd.DataFrame] = {}
    if links_df.empty or not set(columns) <= set(links_df.columns):
        return out
    for (link, direction), rows in links_df.groupby(["link", "direction"]):
        rows = rows.dropna(subset=columns)
        if keep(str(link)) and len(rows):
            out[(str(link), str(direction))] = rows[["t", *columns]].sort_values("t")
    return out


def lateness_rows(prep: Prepared, links_df: pd.DataFrame) -> dict[fidelity.Crossing, pd.DataFrame]:
    """Each emulated crossing's cumulative lateness samples (t, late_n, late_mean_us) from links.csv."""
    return _crossing_rows(links_df, ["late_n", "late_mean_us"],
                          lambda link: prep.backends.get(link, ("", ""))[0] == "emulator")


def drop_rows(links_df: pd.DataFrame) -> dict[fidelity.Crossing, pd.DataFrame]:
    """Each link direction's cumulative drop counters (t, loss_drops, queue_drops) from links.csv (a tc link
    counts no loss-model drop: its netem loss is not counted apart)."""
    return _crossing_rows(links_df, ["loss_drops", "queue_drops"])


def algorithm_rtts(flows_df: pd.DataFrame, events_df: pd.DataFrame | None) -> dict[str, pd.DataFrame]:
    """Each flow's RTT as its own algorithm holds it (t, avg_rtt_ms, base_rtt_ms), in time order: FAST's update
    events (the BPF build), or the module build's TCP_CC_INFO samples in flows.csv (`cc_rtt_ms`, FAST's avgRTT;
    `cc_base_rtt_ms`); none for an algorithm without one. Their difference is what FAST reads as queue."""
    out: dict[str, pd.DataFrame] = {}
    if not flows_df.empty and {"cc_rtt_ms", "cc_base_rtt_ms"} <= set(flows_df.columns):
        rows = flows_df.dropna(subset=["cc_rtt_ms", "cc_base_rtt_ms"])
        for flow, r in rows[(rows["cc_rtt_ms"] > 0) & (rows["cc_base_rtt_ms"] > 0)].groupby("flow"):
            out[str(flow)] = pd.DataFrame({"t": r["t"].astype(float), "avg_rtt_ms": r["cc_rtt_ms"].astype(float),
                                           "base_rtt_ms": r["cc_base_rtt_ms"].astype(float)}).sort_values("t")
    if events_df is not None and {"event", "base_rtt_us", "avg_rtt_us"} <= set(events_df.columns):
        updates = events_df[(events_df["event"] == "update") & (events_df["base_rtt_us"] > 0)
                            & (events_df["avg_rtt_us"] > 0)]
        for flow, r in updates.groupby("flow"):
            out[str(flow)] = pd.DataFrame({"t": r["t"].astype(float), "avg_rtt_ms": r["avg_rtt_us"] / 1000,
                                           "base_rtt_ms": r["base_rtt_us"] / 1000}).sort_values("t")
    return out


def assess_run(prep: Prepared, emulators: dict[str, dict[str, Any]], cpu: dict[str, Any], flows_df: Any,
               links_df: Any, idle_stats: dict[str, dict[str, Any]], accounted: RunAccounts) -> dict[str, Any]:
    """The run's verdict (summary.json's `fidelity`): `emulators` are their final stats by link, `cpu`
    the machine's and each emulator's CPU at the flows' start and end ((/proc/stat, cores, time)) and, under
    "steal", (t, steal, total) samples of /proc/stat while the flows ran; `flows_df` may carry the delay
    accounting's columns (then disturbances are weighed by their effect on the flows); `accounted`, the run's
    account_run (its algorithms' RTTs and the base check's floors)."""
    spec = prep.spec
    (stat0, cores0, t0), (stat1, cores1, t1) = cpu["start"], cpu["end"]
    span = max(t1 - t0, 1e-9)
    times = {str(flow): list(rows["t"]) for flow, rows in flows_df.groupby("flow")} if not flows_df.empty else {}
    weighed = (not flows_df.empty and "acct_read_as_queue_ms" in flows_df and "bytes_acked" in flows_df)
    flows = {str(flow): rows.sort_values("t") for flow, rows in flows_df.groupby("flow")} if weighed else {}
    return fidelity.assess(fidelity.Inputs(
        emulators=dict(emulators), paths=fidelity_paths(prep),
        emulator_cores={link: (cores1[link] - cores0.get(link, 0.0)) / span for link in cores1},
        machine_busy=fidelity.busy_fraction(fidelity.cpu_times(stat0), fidelity.cpu_times(stat1)),
        machine_steal=fidelity.busy_fraction(fidelity.steal_times(stat0), fidelity.steal_times(stat1)),
        sample_gaps_s=fidelity.sample_gaps(times), sample_interval_s=1.0 / spec.sample_hz,
        tc_links=tuple(k for k, (b, _) in prep.backends.items() if b != "emulator"), idle_emulators=idle_stats,
        tc_queues=tc_queues(prep, links_df), routes=fidelity_routes(prep),
        counters=fidelity_counters(prep, links_df, {
            (link, d): float(fig["late_p99_us"] or 0) for link, stats in emulators.items()
            for d, fig in fidelity.link_figures(stats).items()}),
        flows=flows, lateness=lateness_rows(prep, links_df) if flows else {},
        algorithm_rtts=accounted.own_rtts if flows else {}, queue_floor_ms=accounted.floors if flows else {},
        steal_samples=list(cpu.get("steal", [])), drops=drop_rows(links_df) if flows else {}))


def note_neighbours(verdict: dict[str, Any], neighbours: list[dict[str, Any]]) -> dict[str, Any]:
    """The verdict with the other runs that shared the machine while the flows ran (`neighbours`, as
    the engine saw them); an unfaithful verdict with neighbours says they may be the cause, for the
    machine's load it judges was theirs too."""
    out = dict(verdict, neighbours=[n.get("prefix") for n in neighbours])
    if neighbours and not verdict.get("faithful"):
        names = ", ".join(str(n.get("run") or n.get("prefix")) for n in neighbours)
        out["reasons"] = [*verdict.get("reasons", []),
                          f"{len(neighbours)} other run{'s' if len(neighbours) > 1 else ''} shared the machine while "
                          f"these flows ran ({names}): their load may be the cause; run it again alone"]
    return out


def fidelity_routes(prep: Prepared) -> tuple[tuple[fidelity.Crossing, ...], ...]:
    """Every route the flows' data and ACKs take over the run (each flow's path and every reroute's) as
    ordered shaped crossings: the feeders of the conservation check."""
    routes = []
    for f in prep.flows:
        for path in {f.path, *(r.path for r in prep.spec.reroutes if not r.flows or f.id in r.flows)}:
            for a, b in ((f.src, f.dst), (f.dst, f.src)):
                routes.append(tuple(_named(prep.routes.of(a, b, path))))
    return tuple(dict.fromkeys(routes))


def _named(way: tuple[tuple[str, bool], ...]) -> list[fidelity.Crossing]:
    """The plan's crossings (link, forward?) as the verdict names them (link, "forward" | "reverse")."""
    return [(link, "forward" if forward else "reverse") for link, forward in way]


def fidelity_counters(prep: Prepared, links_df: Any,
                      late_p99_us: dict[fidelity.Crossing, float]) -> dict[fidelity.Crossing, fidelity.Counters]:
    """The emulated link directions' sampled byte counters (sent + queued) with their rates and p99
    lateness, for the conservation check (also bench/conservation.py's, on finished runs)."""
    out: dict[fidelity.Crossing, fidelity.Counters] = {}
    if links_df.empty or not {"tx_bytes", "backlog_bytes"} <= set(links_df.columns):
        return out
    for link in [k for k, (b, _) in prep.backends.items() if b == "emulator" and k in prep.links]:
        for direction in ("forward", "reverse"):
            rows = links_df[(links_df["link"] == link) & (links_df["direction"] == direction)]
            rows = rows.dropna(subset=["tx_bytes", "backlog_bytes"]).sort_values("t")
            side = getattr(prep.links[link], direction)
            if len(rows) >= 2:
                out[(link, direction)] = fidelity.Counters(
                    side.rate_bps, tuple(rows["t"].astype(float)),
                    tuple((rows["tx_bytes"] + rows["backlog_bytes"]).astype(float)),
                    tuple(rows["backlog_bytes"].astype(float)), late_p99_us.get((link, direction), 0.0),
                    # a schedule's steps (a rate above rate_bps, a delay drop bunching releases) and a
                    # trace's bursts of opportunities leave faster than rate_bps: not paced, like jitter
                    paced=_steady(side))
    return out


def fidelity_paths(prep: Prepared) -> list[fidelity.PathInfo]:
    """Each flow's emulated crossings (data and ACKs) and the basis of its delay budget, from the plan; whether a
    link of it delays packets by a model that varies packet to packet (a MAC, jitter, a schedule, a trace)."""
    def variable(crossings: tuple[tuple[str, bool], ...]) -> bool:
        sides = [getattr(prep.links[link], "forward" if fwd else "reverse") for link, fwd in crossings
                 if link in prep.links]
        return any(not _steady(side) for side in sides)

    return [fidelity.PathInfo(f.id, tuple(_named(p.data + p.acks)), p.figures.rtt_ms, p.target_queue_ms, prep.spec.mtu,
                              variable(p.data + p.acks))
            for f in prep.flows for p in (prep.paths[f.id],)]


def _steady(side: Any) -> bool:
    """A link direction that delays every packet alike beyond its queue: no MAC or policer model, no jitter, no
    schedule, no trace (the conservation check's `paced`, and the base check's condition)."""
    return side.policy is None and not side.jitter_us and not side.schedule and side.trace is None


def judge_again(folder: Path) -> Summary:
    """The verdict this code gives a recorded run (its traces, plan and the emulators' figures as its summary
    kept them), written into its summary.json and flows.csv (with the delay accounting): bench/verdict.py
    --rejudge judges its recorded runs again with a later verdict. The machine's steal over time is not
    recorded in a run folder: the reasons then give the run's only."""
    rf = RunFolder(folder)
    spec = load_spec(str(rf.path(SPEC)))
    prep = prepare(spec)
    flows, links = rf.flows(), rf.links()
    flows = flows.drop(columns=[c for c in accounting.COLUMNS if c in flows])
    accounted = account_run(prep, flows, links, rf.hop_flows(), rf.events() if rf.has(EVENTS) else None)
    flows = accounting.with_columns(flows, accounted.accounts)
    summary = rf.summary()
    old = summary.fidelity or Verdict(faithful=True)
    for f in summary.flows:
        f.delay_accounting = FlowDelay.model_validate(accounting.flow_figures(
            accounted.routes[f.id], accounted.accounts[f.id], f.min_rtt_ms))
    tags = {"forward": "ab", "reverse": "ba"}
    emulators = {link: {tags[d]: {"late_us": {"mean": x.late_mean_us, "p50": x.late_p50_us, "p99": x.late_p99_us,
                                              "max": x.late_max_us, "n": x.segments},
                                  "sock_drops": x.sock_drops or 0}
                        for d, x in sides.items()} for link, sides in old.links.items()}
    late99 = {(link, d): float(x.late_p99_us or 0) for link, sides in old.links.items() for d, x in sides.items()}
    verdict = fidelity.assess(fidelity.Inputs(
        emulators=emulators, paths=fidelity_paths(prep), emulator_cores=dict(old.emulator_cores),
        machine_busy=old.machine_busy, machine_steal=old.machine_steal,
        sample_gaps_s=dict(old.sample_gaps_s), sample_interval_s=1 / spec.sample_hz,
        tc_links=tuple(k for k, (b, _) in prep.backends.items() if b != "emulator"),
        tc_queues=tc_queues(prep, links), routes=fidelity_routes(prep),
        counters=fidelity_counters(prep, links, late99),
        flows={str(f): r.sort_values("t") for f, r in flows.groupby("flow")},
        algorithm_rtts=accounted.own_rtts, queue_floor_ms=accounted.floors,
        lateness=lateness_rows(prep, links), drops=drop_rows(links)))
    summary.fidelity = Verdict.model_validate(note_neighbours(verdict, [{"prefix": n} for n in old.neighbours]))
    rf.replace_flows(flows)
    rf.replace_summary(summary)
    return summary
