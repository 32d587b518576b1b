"""summary.json: what a finished run measured, as typed parts (fastlab.base.record says how the record is
versioned and how a field is added)."""

from __future__ import annotations

from fastlab.base.record.part import (
    SCHEMA_VERSION,
    Goodput,
    LossDrops,
    MeanBacklog,
    MeanCwnd,
    MeanRtt,
    Part,
    QueueDrops,
    Utilization,
    figure,
)


class Quantiles(Part):
    """One part of a flow's RTT samples over the run (fastlab.measure.accounting): its median and 99th
    percentile (None: the flow had no accounted sample)."""

    median: float | None = figure(None, "ms", "median over the flow's RTT samples")
    p99: float | None = figure(None, "ms", "99th percentile over the flow's RTT samples")


class FlowDelay(Part):
    """Where one flow's round trip went (fastlab.measure.accounting.flow_figures): each RTT sample split into
    propagation, serialization, the links' queueing, the emulators' lateness and the rest, which the hosts
    and the datapath added; the parts add up to the sample."""

    samples: int | None = figure(None, "", "its RTT samples accounted")
    propagation_ms: Quantiles | None = figure(None, "ms", "the links' propagation delay, both ways")
    serialization_ms: Quantiles | None = figure(None, "ms", "one segment's serialization at each hop, both ways")
    queueing_ms: Quantiles | None = figure(None, "ms", "the queueing the emulated links imposed (linkemu's, "
                                                       "tc's qdisc statistics for tc links)")
    lateness_ms: Quantiles | None = figure(None, "ms", "the emulators' departure lateness along the path")
    hosts_ms: Quantiles | None = figure(None, "ms", "unaccounted delay: what the hosts and the datapath added "
                                                    "(qdisc, softirq, the switch, the receiver's ACK path)")
    rtt_ms: Quantiles | None = figure(None, "ms", "the RTT samples themselves (tcp_info srtt)")
    read_as_queue_ms: Quantiles | None = figure(None, "ms", "the delay the flow read as queue that no link "
                                                            "queued (lateness and hosts above its minimum RTT's "
                                                            "share; may be negative)")
    hosts_floor_ms: float | None = figure(None, "ms", "the hosts' share of its minimum RTT (neither propagation "
                                                      "nor serialization): taken for path by the flow")
    hops_unmeasured: list[str] = figure([], "", "link directions on its path whose queueing no emulator measured")


class FlowFigures(Part):
    """One flow over the run (fastlab.measure.analysis.flow_summary)."""

    id: str = figure(..., "", "the flow's id: f1, f2, ... in the spec's order (a flow with count n gives n)")
    src: str | None = figure(None, "", "the sending host")
    dst: str | None = figure(None, "", "the receiving host")
    cc: str | None = figure(None, "", "its congestion control")
    start_s: float | None = figure(None, "s", "when it started, after the flows' time zero")
    stop_s: float | None = figure(None, "s", "when it stopped")
    throughput_mbps: Goodput = None
    mean_rtt_ms: MeanRtt = None
    min_rtt_ms: float | None = figure(None, "ms", "its least RTT sample (tcp_info min_rtt)")
    # Delay percentiles (issue 51): over the flow's smoothed-RTT samples of flows.csv, its whole trace (slow
    # start included, as the mean), samples of 0 or none left out (fastlab.measure.analysis.rtt_samples).
    # None: a run made before them, or a flow without RTT samples. The one-way percentiles are of its data's
    # delay through the emulated path (fastlab.measure.accounting's acct_one_way_ms, one value per RTT sample):
    # what the links imposed, timed by linkemu per frame; the hosts' share is not in it (no packet is timestamped
    # at both ends: only the round trip shows it).
    rtt_p50_ms: float | None = figure(None, "ms", "median of its smoothed RTT samples (tcp_info srtt)")
    rtt_p95_ms: float | None = figure(None, "ms", "95th percentile of its smoothed RTT samples")
    rtt_p99_ms: float | None = figure(None, "ms", "99th percentile of its smoothed RTT samples")
    owd_p50_ms: float | None = figure(None, "ms", "median one-way delay of its data through the emulated links")
    owd_p95_ms: float | None = figure(None, "ms", "95th percentile of that one-way delay")
    owd_p99_ms: float | None = figure(None, "ms", "99th percentile of that one-way delay")
    mean_cwnd_pkts: MeanCwnd = None
    retransmits: int | None = figure(None, "packets", "segments it retransmitted")
    samples: int | None = figure(None, "", "its trace samples in flows.csv")
    delay_accounting: FlowDelay | None = figure(None, "", "where its round trip went (None: a run made before "
                                                          "the delay accounting, or a flow without RTT samples)")


class DirectionFigures(Part):
    """One direction of a shaped link over the flows' active window (fastlab.measure.analysis.link_summary)."""

    queue_drops: QueueDrops = None
    loss_drops: LossDrops = None
    aqm_drops: int | None = figure(None, "packets", "packets the AQM dropped early (0 on a link without one)")
    aqm_marks: int | None = figure(None, "packets", "packets the AQM ECN-marked (0 on a link without one)")
    drops: int | None = figure(None, "packets", "dropped in all: queue + loss model + AQM")
    arrivals_pkts: int | None = figure(None, "packets", "packets that reached the link (None: not counted)")
    mean_backlog_pkts: MeanBacklog = None
    max_backlog_pkts: int | None = figure(None, "packets", "largest queue sample")
    utilization: Utilization = None


class LinkName(Part):
    """What a shaped link is: its id and its capacity (LinkFigures' first fields)."""

    id: str = figure(..., "", "the link's id in the topology")
    capacity_mbps: float | None = figure(None, "Mb/s", "its rate, averaged over the active window for a schedule")


class LinkFigures(DirectionFigures, LinkName):
    """A shaped link: its id and capacity, its forward direction's figures; `reverse` the other direction's.
    (Its fields come in that order: LinkName's, then DirectionFigures', then its own.)"""

    reverse: DirectionFigures | None = figure(None, "", "the reverse direction's figures (the ACKs' way)")


class IdleRtt(Part):
    """The idle pings over one flow's path before the flows started: the path's RTT with empty queues."""

    src: str = figure(..., "", "the pinging host (the flow's sender)")
    dst: str = figure(..., "", "the pinged host")
    pings: int | None = figure(None, "", "pings answered and kept")
    min_ms: float | None = figure(None, "ms", "least RTT")
    median_ms: float | None = figure(None, "ms", "median RTT")
    mean_ms: float | None = figure(None, "ms", "mean RTT")
    max_ms: float | None = figure(None, "ms", "largest RTT")
    samples_ms: list[float] = figure([], "ms", "every answered ping's RTT, in order")
    lost: int | None = figure(None, "", "pings lost (a lossy path drops pings too; retried)")


class PathDelay(Part):
    """The delay the emulators added to one flow's path, against its budget (fastlab.measure.fidelity)."""

    flow: str = figure(..., "", "the flow's id")
    emulation_delay_ms: float | None = figure(None, "ms", "sum of its links' mean departure lateness (None: "
                                                          "no emulator on the path measured it)")
    budget_ms: float | None = figure(None, "ms", "the delay allowed before the run stops being faithful")
    basis: str | None = figure(None, "", "what the budget is: 'FAST alpha queue' or 'base RTT'")
    idle_emulation_delay_ms: float | None = figure(None, "ms", "the same during the idle pings")
    crossings: list[list[str]] = figure([], "", "the emulated link directions its data and ACKs cross, "
                                                "[link, 'forward' | 'reverse'] in path order")


class LinkTiming(Part):
    """How late one emulated link direction sent its packets, and what its socket dropped (linkemu's stats)."""

    late_mean_us: float | None = figure(None, "µs", "mean departure lateness")
    # linkemu's percentiles are whole µs: written as it wrote them
    late_p50_us: int | float | None = figure(None, "µs", "median departure lateness")
    late_p99_us: int | float | None = figure(None, "µs", "99th percentile of departure lateness")
    late_max_us: int | float | None = figure(None, "µs", "largest departure lateness")
    segments: int | None = figure(None, "", "segments it sent")
    sock_drops: int | None = figure(None, "packets", "frames its socket dropped (losses no model decided)")


class TcQueue(Part):
    """A tc-shaped direction: the share of its rate it delivered while packets were queued."""

    busy_s: float | None = figure(None, "s", "time with at least two packets queued")
    delivered_share: float | None = figure(None, "fraction", "bytes sent over rate x busy time (None: too "
                                                             "little busy time)")


class Burst(Part):
    """The conservation check of one link direction (fastlab.measure.fidelity.conservation): the most bytes
    that reached it within a window beyond what its feeders could deliver (a burst something between the
    emulated links held and released together)."""

    excess_bytes: int | float | None = figure(None, "bytes", "the most bytes beyond the feeders' rate and slack")
    excess_ms: float | None = figure(None, "ms", "that excess as queueing delay at this link's rate")
    at_s: float | None = figure(None, "s", "when the window of the largest excess ended (None: no excess)")
    from_s: float | None = figure(None, "s", "when it began (None: no excess, or a run made before it was kept)")
    slack_bytes: int | float | None = figure(None, "bytes", "what the feeders' queues and lateness may release "
                                                            "at once without a burst")
    fed_by: list[str] = figure([], "", "the slowest link directions feeding it")
    budget_ms: float | None = figure(None, "ms", "the least delay budget of the flows crossing it")


class DelayJudged(Part):
    """The verdict's view of one flow's delay accounting (fastlab.measure.weighing.accounting_figures): the
    delay it read as queue that no link queued over its samples, against its budget."""

    flow: str = figure(..., "", "the flow's id")
    samples: int | None = figure(None, "", "its accounted RTT samples")
    read_as_queue_median_ms: float = figure(..., "ms", "median delay read as queue that no link queued (judged)")
    read_as_queue_mean_ms: float | None = figure(None, "ms", "its mean")
    read_as_queue_p99_ms: float | None = figure(None, "ms", "its 99th percentile")
    lateness_median_ms: float | None = figure(None, "ms", "of it, the emulators' departure lateness (median)")
    hosts_median_ms: float | None = figure(None, "ms", "of it, what the hosts and the datapath added (median "
                                                       "minus lateness)")
    read_by: str | None = figure(None, "", "whose RTTs: \"its own avgRTT - baseRTT\" (FAST's) or \"the kernel's "
                                           "srtt\"")
    budget_ms: float | None = figure(None, "ms", "the delay allowed before the run stops being faithful")
    basis: str | None = figure(None, "", "what the budget is: 'FAST alpha queue' or 'base RTT'")
    queue_floor_ms: float | None = figure(None, "ms", "the least queue its path held while it ran (the links' "
                                                      "sampled backlogs at their rates)")
    base_excess_ms: float | None = figure(None, "ms", "how far the algorithm's own baseRTT lies above "
                                                      "propagation, serialization and the path's least queue "
                                                      "(None: it reported none)")


class DisturbanceSeen(Part):
    """One thing that went wrong for a while (fastlab.measure.effects.Disturbance): a burst held between the
    links, late departures, a spell of host delay or a stalled trace."""

    kind: str = figure(..., "", "'held burst', 'late departures', 'host delay' or 'trace gap'")
    where: str = figure(..., "", "a link direction, or a flow for host delay and trace gaps")
    t0_s: float = figure(..., "s", "when it began, after the flows' time zero")
    t1_s: float = figure(..., "s", "when it ended")
    size: str = figure("", "", "its size in words ('7.6 ms of queue')")
    flows: list[str] = figure([], "", "the flows it touched")
    steal_share: float | None = figure(None, "fraction", "the hypervisor's steal share of the CPU time over it "
                                                         "(None: not sampled)")


class EffectSpan(Part):
    """What the disturbances over one span did to one flow (fastlab.measure.effects.Effect)."""

    flow: str = figure(..., "", "the flow's id")
    t0_s: float = figure(..., "s", "start of the span measured")
    t1_s: float = figure(..., "s", "its end: the disturbances' end plus the flow's settling time")
    until_s: float | None = figure(None, "s", "the disturbances' own end")
    kinds: list[str] = figure([], "", "the kinds of disturbance in the span")
    deficit_bytes: float | None = figure(None, "bytes", "bytes short of the flow's rate just before (None: no "
                                                        "steady rate before to weigh it against)")
    reference_mbps: float | None = figure(None, "Mb/s", "the flow's rate just before")
    window_cut: float | None = figure(None, "fraction", "its deepest cwnd cut relative to before (0..1)")
    read_as_queue_max_ms: float | None = figure(None, "ms", "the most delay it read as queue that no link "
                                                            "queued in the span")
    loss_at_s: float | None = figure(None, "s", "measured only to here: the onset of a loss the path's loss "
                                                "model made (what followed was the loss's)")


class FlowEffects(Part):
    """What disturbed one flow and what it cost (fastlab.measure.weighing.effect_reasons)."""

    deficit_share: float | None = figure(None, "fraction", "the share of its delivered bytes the disturbances "
                                                           "cost (judged against delivered_share_max)")
    unweighed_share: float | None = figure(None, "fraction", "the share of its time disturbed with no steady "
                                                             "stretch before to weigh it against")
    spans: list[EffectSpan] = figure([], "", "each span and what it cost")


class Verdict(Part):
    """The emulation's fidelity verdict (fastlab.measure.fidelity.assess): faithful only when no threshold
    was crossed, each crossing a reason. An unfaithful run proves nothing about the congestion control."""

    faithful: bool = figure(..., "", "whether the emulation kept time (no threshold crossed)")
    reasons: list[str] = figure([], "", "each threshold crossed, in words")
    advice: str | None = figure(None, "", "what to do about it")
    paths: list[PathDelay] = figure([], "", "per flow: the delay the emulators added against its budget")
    links: dict[str, dict[str, LinkTiming]] = figure({}, "", "per emulated link and direction: departure lateness")
    idle_links: dict[str, dict[str, LinkTiming]] = figure({}, "", "the same during the idle pings")
    emulator_cores: dict[str, float] = figure({}, "cores", "per link: the CPU its emulator used")
    machine_busy: float | None = figure(None, "fraction", "the machine's CPU busy share while the flows ran")
    machine_steal: float | None = figure(None, "fraction", "the hypervisor's steal share of the CPU time")
    sample_gaps_s: dict[str, float] = figure({}, "s", "per flow: the longest gap in its trace")
    tc_queues: dict[str, dict[str, TcQueue]] = figure({}, "", "per tc-shaped link and direction: rate delivered")
    conservation: dict[str, Burst] = figure({}, "", "per link direction: bytes beyond what its feeders could "
                                                     "deliver (bursts held between the emulated links)")
    delay_accounting: dict[str, DelayJudged] = figure({}, "", "per flow: the delay it read as queue that no "
                                                              "link queued, judged (empty: made before it)")
    disturbances: list[DisturbanceSeen] = figure([], "", "every disturbance found while the flows ran")
    effects: dict[str, FlowEffects] = figure({}, "", "per flow: what the disturbances cost it (empty: none, or "
                                                     "made before disturbances were weighed)")
    unmeasured: list[str] = figure([], "", "what the verdict could not measure, in words")
    thresholds: dict[str, float] = figure({}, "", "the limits judged against (units in their names)")
    neighbours: list[str | None] = figure([], "", "prefixes of the runs that shared the machine as the flows ran")
    rejudged: str | None = figure(None, "", "who judged the run again after it ran, when one did")


class SegmentFlow(Part):
    """A flow over one segment's settled time."""

    id: str = figure(..., "", "the flow's id")
    throughput_mbps: Goodput = None
    mean_rtt_ms: MeanRtt = None
    mean_cwnd_pkts: MeanCwnd = None


class SegmentLink(Part):
    """A link's forward direction over one segment's settled time."""

    id: str = figure(..., "", "the link's id")
    utilization: Utilization = None
    mean_backlog_pkts: MeanBacklog = None
    queue_drops: QueueDrops = None
    loss_drops: LossDrops = None


class Segment(Part):
    """A part of a run whose parameters changed (fastlab.theory.segments.figures): measured over its settled
    time [settled_from_s, end_s)."""

    start_s: float | None = figure(None, "s", "when the part began")
    end_s: float | None = figure(None, "s", "when it ended")
    settled_from_s: float | None = figure(None, "s", "from when it is judged (after the change settled)")
    changes: list[str] = figure([], "", "the changes that began it, in words (none for the first)")
    flows: list[SegmentFlow] = figure([], "", "each flow over the part")
    links: list[SegmentLink] = figure([], "", "each link over the part")


class Summary(Part):
    """summary.json: what a finished run measured (written when the run completed)."""

    schema_version: int = figure(SCHEMA_VERSION, "", "the shape of this file (see fastlab.base.record)")
    flows: list[FlowFigures] = figure([], "", "each flow over the run")
    links: list[LinkFigures] = figure([], "", "each shaped link over the flows' active window")
    jain_index: float | None = figure(None, "", "Jain's fairness index of the flows' goodputs (1: equal)")
    active_window_s: list[float] | None = figure(None, "s", "[first start, last stop] of the flows")
    idle_rtt: list[IdleRtt] = figure([], "", "per flow path: the idle pings before the flows")
    fidelity: Verdict | None = figure(None, "", "the emulation's verdict (None: made before verdicts)")
    segments: list[Segment] | None = figure(None, "", "the parts of a run whose parameters changed (None: none)")
    what_happened: list[str] | None = figure(None, "", "the results page's note, most telling first (None: "
                                                       "made before the engine wrote it)")

    def flow(self, flow_id: str) -> FlowFigures | None:
        """The flow `flow_id`, or None."""
        return next((f for f in self.flows if f.id == flow_id), None)

    def link(self, link_id: str) -> LinkFigures | None:
        """The link `link_id`, or None."""
        return next((link for link in self.links if link.id == link_id), None)

    def idle(self, src: str, dst: str) -> IdleRtt | None:
        """The idle pings from `src` to `dst`, or None."""
        return next((p for p in self.idle_rtt if p.src == src and p.dst == dst), None)

    @property
    def faithful(self) -> bool | None:
        """The verdict in one value: True, False, or None when the run was not assessed."""
        return None if self.fidelity is None else self.fidelity.faithful
