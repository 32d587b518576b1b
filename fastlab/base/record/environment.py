"""environment.json: where and how a run ran, as typed parts (fastlab.base.record says how the record is
versioned and how a field is added)."""

from __future__ import annotations

from typing import Any

from fastlab.base.record.part import SCHEMA_VERSION, Part, figure


class RunInfo(Part):
    """Which run this was and where it ran."""

    name: str | None = figure(None, "", "the spec's name")
    prefix: str | None = figure(None, "", "the run's prefix of namespaces, interfaces and bridges")
    started: str | None = figure(None, "", "when it started (ISO 8601, UTC)")
    host: str | None = figure(None, "", "the machine it ran on")


class Choice(Part):
    """A job's backend and why it was chosen."""

    backend: str | None = figure(None, "", "what did the job")
    why: str | None = figure(None, "", "why, in words")


class ResolvedDirection(Part):
    """One direction of a shaped link as the plan resolved it."""

    rate_bps: int | None = figure(None, "b/s", "its rate")
    delay_us: int | None = figure(None, "µs", "its one-way delay")
    jitter_us: int | None = figure(None, "µs", "its delay's jitter")
    limit_pkts: int | None = figure(None, "packets", "its buffer (None: sized in bytes)")
    limit_bytes: int | None = figure(None, "bytes", "its buffer (None: sized in packets)")
    loss: dict[str, Any] | None = figure(None, "", "its loss model, as the spec's (None: none)")
    policy: dict[str, Any] | None = figure(None, "", "its policer or DOCSIS upstream, as the spec's (None: none)")
    mtu_bytes: int | None = figure(None, "bytes", "its MTU")


class Resolved(Part):
    """A shaped link as the plan resolved it: each direction, and the path's RTT."""

    forward: ResolvedDirection | None = figure(None, "", "the direction away from the link's first node")
    reverse: ResolvedDirection | None = figure(None, "", "the direction back (the ACKs' way)")
    rtt_ms: float | None = figure(None, "ms", "the RTT the link's delays make")


class Shaping(Part):
    """What shaped one link (tc or the emulator), why, and what it was set to."""

    link: str = figure(..., "", "the link's id")
    backend: str | None = figure(None, "", "tc or emulator")
    why: str | None = figure(None, "", "why that backend")
    resolved: Resolved | None = figure(None, "", "the values it was set to")


class CcApplied(Part):
    """One thing done to congestion control: a load, a host's parameters, a change during the run, an unload."""

    cc: str | None = figure(None, "", "the algorithm")
    impl: str | None = figure(None, "", "its build: bpf or module (a load)")
    scope: str | None = figure(None, "", "host or global (a parameter setting)")
    host: str | None = figure(None, "", "the host whose parameters were set")
    args: dict[str, Any] | None = figure(None, "", "the parameters set")
    at_s: float | None = figure(None, "s", "when, after the flows' time zero (None: before the flows)")
    live: bool | None = figure(None, "", "set from a front end while the run went, not scheduled")


class CcRecord(Part):
    """Congestion control: what was applied, in order, and the hashes of fastlab's builds used."""

    applied: list[CcApplied] = figure([], "", "loads, parameter settings and changes, in order")
    builds: dict[str, str] = figure({}, "", "file -> sha256 of fastlab's algorithm builds used")


class FlowSetup(Part):
    """How one flow was set up."""

    cc: str | None = figure(None, "", "its congestion control")
    cc_args: dict[str, Any] = figure({}, "", "its algorithm's parameters")
    port: int | None = figure(None, "", "its TCP port")
    path: str | None = figure(None, "", "its routed path through an OpenFlow core")
    max_cwnd_pkts: int | None = figure(None, "packets", "the ceiling set on its window")


class Environment(Part):
    """environment.json: where and how the run ran (the plan's decisions, what was applied, the tools)."""

    schema_version: int = figure(SCHEMA_VERSION, "", "the shape of this file (see fastlab.base.record)")
    run: RunInfo = figure(RunInfo(), "", "which run and where")
    kernel: str | None = figure(None, "", "the kernel release")
    capabilities: dict[str, Any] = figure({}, "", "the capability probes: name, present, detail")
    backends: dict[str, Choice] = figure({}, "", "per job: its backend and why")
    links_not_emulated: dict[str, str] = figure({}, "", "links built as plain links, and why")
    shaping: list[Shaping] = figure([], "", "per shaped link: backend, values, commands")
    network_commands: list[Any] = figure([], "", "the commands that built the network")
    socket_buffer_max_bytes: int | None = figure(None, "bytes", "the socket buffers' ceiling set")
    sysctls: dict[str, Any] = figure({}, "", "the sysctls read at the start")
    tools: dict[str, str | None] = figure({}, "", "tool -> version")
    flows: dict[str, FlowSetup] = figure({}, "", "per flow id: how it was set up")
    cwnd_clamp: dict[str, Any] | None = figure(None, "", "the window ceiling's program, when one was attached")
    congestion_control: CcRecord = figure(CcRecord(), "", "what was applied and the builds used")
    openflow: Any = figure(None, "", "the OpenFlow controller's record, when one ran")
    concurrency: dict[str, Any] | None = figure(None, "", "the runs beside it and the queue's admission")

    def shaping_of(self, link_id: str) -> Shaping | None:
        """How the link `link_id` was shaped, or None."""
        return next((s for s in self.shaping if s.link == link_id), None)
