"""Bundle replay: rerun a bundle's spec here and say whether the results are consistent with it.

`replay_bundle` verifies and extracts a bundle (a run, or some points of a sweep), reruns each
spec.yaml with the engine, and compares the two runs' figures. The comparison is pure
(`compare`, `environment_differences`) and every metric's tolerance is stated in `TOLERANCES`
with the reason for it. Seeded loss is compared exactly: the link emulator decides each drop
from (seed, direction, packet index) alone, so over the packet indices both runs saw the very
same packets are dropped; total counts differ only by the drops beyond the shorter run's last
packet.

Each run's fidelity verdict is reported side by side (`compare` adds a row that never fails,
`fidelity_notes` says it in words): a replay whose emulation was faithful when the original's
was not (or the reverse) is worth knowing when reading the comparison, but is no inconsistency.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import math
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path

from fastlab.base import paths, rundir
from fastlab.base.record import Environment, FlowFigures, LinkFigures, Summary, headline
from fastlab.base.rundir import SPEC, RunFolder
from fastlab.define.schema import ExperimentSpec, load_spec, trace_files
from fastlab.measure import fidelity
from fastlab.results import bundle, fidelity_view

log = logging.getLogger(__name__)

DIRECTIONS = {"ab": "forward", "ba": "reverse"}  # linkemu's drops log -> the summary's link directions


@dataclass(frozen=True)
class Tolerance:
    """|replay - original| must be within the largest of: absolute, relative x |original|,
    poisson x sqrt(|original|) (the spread of a count of independent random events)."""

    reason: str
    absolute: float = 0.0
    relative: float = 0.0
    poisson: float = 0.0

    def allowed(self, original: float) -> float:
        return max(self.absolute, self.relative * abs(original), self.poisson * math.sqrt(abs(original)))

    def describe(self) -> str:
        parts = [f"±{self.absolute:g}"] if self.absolute else []
        parts += [f"±{self.relative:.0%}"] if self.relative else []
        parts += [f"±{self.poisson:g}√n"] if self.poisson else []
        return " or ".join(parts) + (" (larger)" if len(parts) > 1 else "") if parts else "exact"


TOLERANCES: dict[str, Tolerance] = {
    "throughput_mbps": Tolerance("goodput of a short run moves with slow-start timing and, under loss, with which "
                                 "window each drop hits", absolute=0.5, relative=0.10),
    "utilization": Tolerance("the bottleneck's busy fraction over the active window: start-up and scheduler noise "
                             "shift it by a few percent, and under loss it moves with goodput", absolute=0.03,
                             relative=0.10),
    "mean_rtt_ms": Tolerance("base RTT plus queueing delay; the queue's sawtooth phase at the end of a short run "
                             "moves the mean", absolute=1.0, relative=0.10),
    "min_rtt_ms": Tolerance("the emulated propagation delay: should repeat closely, beyond timer granularity",
                            absolute=0.5, relative=0.05),
    "idle_rtt_ms": Tolerance("the median idle ping across the empty path: the emulated base RTT",
                             absolute=0.5, relative=0.05),
    "mean_backlog_pkts": Tolerance("the queue's mean depends on where in their cycles the flows are",
                                   absolute=2.0, relative=0.25),
    "retransmits": Tolerance("loss-model drops repeat, buffer-overflow drops depend on timing",
                             absolute=3.0, relative=0.25),
    "queue_drops": Tolerance("buffer overflows come in bursts at each window peak; their count follows timing",
                             absolute=5.0, relative=0.5),
    "jain_index": Tolerance("fairness between flows over a short run", absolute=0.05),
    "loss_drops_seeded": Tolerance("seeded loss: drops are decided by (seed, direction, packet index) only, so the "
                                   "same packet indices are dropped"),
    "loss_drops_total": Tolerance("the same seeded loss pattern over as many packets as each run carried "
                                  "(which varies with timing)", absolute=3.0, relative=0.15),
    "loss_drops_unseeded": Tolerance("unseeded random loss: independent random drops", absolute=2.0, poisson=3.0),
}


@dataclass
class RunFacts:
    """What replay compares of one run: its record (summary and environment: the shaping backend per link),
    the loss drops logged."""

    summary: Summary
    environment: Environment = field(default_factory=Environment)
    loss_drops: dict[str, dict[str, list[int]]] = field(default_factory=dict)  # link -> direction -> indices

    @classmethod
    def from_dir(cls, run_dir: Path) -> RunFacts:
        drops: dict[str, dict[str, list[int]]] = {}
        for log in sorted(run_dir.glob(rundir.drops_log_name("*"))):
            link = drops.setdefault(log.stem.removeprefix(rundir.DROPS_LOG_PREFIX), {})
            for line in log.read_text().splitlines():
                direction, _, index = line.partition(" ")
                if direction in DIRECTIONS and index.isdigit():
                    link.setdefault(DIRECTIONS[direction], []).append(int(index))
        folder = RunFolder(run_dir)
        return cls(folder.summary(), folder.environment(missing_ok=True), drops)

    def seeded_loss(self, link: str) -> bool:
        """The link's loss was made by the emulator (seeded, per packet index) rather than netem."""
        shaped = self.environment.shaping_of(link)
        return shaped is not None and shaped.backend == "emulator"

    @staticmethod
    def arrivals(link: LinkFigures | None, direction: str) -> int | None:
        figures = link if direction == "forward" or link is None else link.reverse
        return figures.arrivals_pkts if figures is not None else None


@dataclass(frozen=True)
class Comparison:
    """One compared figure; `informational` rows (the fidelity verdicts) are shown, never fail."""

    metric: str
    original: float | None
    replay: float | None
    tolerance: str
    ok: bool
    informational: bool = False

    @property
    def diff(self) -> float | None:
        return None if self.original is None or self.replay is None else self.replay - self.original


def _row(metric: str, kind: str, original: float | None, replay: float | None) -> Comparison:
    tolerance = TOLERANCES[kind]
    ok = original is None and replay is None or (original is not None and replay is not None
                                                 and abs(replay - original) <= tolerance.allowed(original) + 1e-9)
    return Comparison(metric, original, replay, tolerance.describe(), ok)


def _median_idle(summary: Summary) -> dict[str, float | None]:
    return {f"{p.src}->{p.dst}": p.median_ms for p in summary.idle_rtt}


def _figure(part: FlowFigures | LinkFigures | None, name: str) -> float | None:
    """A compared figure of a flow or link (None: the run lacks it, or it is no number)."""
    value = getattr(part, name, None)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


FIDELITY_METRIC = "emulation faithful (1 yes, 0 no, - not assessed)"


def fidelity_row(original: RunFacts, replay: RunFacts) -> Comparison:
    """The two runs' fidelity verdicts side by side: shown, not compared (ok whatever they are)."""
    flags = [headline(run.summary).run("faithful").value for run in (original, replay)]
    o, r = (f if isinstance(f, int) else None for f in flags)  # 1, 0 or None (not assessed)
    return Comparison(FIDELITY_METRIC, o, r, "reported, not compared", True, informational=True)


def fidelity_notes(original: RunFacts, replay: RunFacts) -> list[str]:
    """Each run's fidelity headline and, when the verdicts differ, one line saying what that means."""
    verdicts = [run.summary.fidelity for run in (original, replay)]
    lines = [f"original {fidelity.headline(verdicts[0])}", f"replay   {fidelity.headline(verdicts[1])}"]
    states = [fidelity_view.state(v) for v in verdicts]
    if "unassessed" not in states and states[0] != states[1]:
        which = "the original" if states[0] == "unfaithful" else "this replay"
        lines.append(f"the fidelity verdicts differ: the emulation of {which} was not faithful, so differences "
                     "in the figures may come from the machine rather than the experiment")
    return lines


def compare(original: RunFacts, replay: RunFacts) -> list[Comparison]:
    """Every compared figure of two runs of one spec, each against its tolerance, then the two
    fidelity verdicts side by side (informational); pure."""
    rows: list[Comparison] = []
    o_flows = {f.id: f for f in original.summary.flows}
    r_flows = {f.id: f for f in replay.summary.flows}
    for flow_id in sorted(o_flows.keys() | r_flows.keys(), key=lambda f: (len(f), f)):
        o, r = o_flows.get(flow_id), r_flows.get(flow_id)
        for key in ("throughput_mbps", "mean_rtt_ms", "min_rtt_ms", "retransmits"):
            rows.append(_row(f"{flow_id} {key}", key, _figure(o, key), _figure(r, key)))
    o_idle, r_idle = _median_idle(original.summary), _median_idle(replay.summary)
    for path in sorted(o_idle.keys() | r_idle.keys()):
        rows.append(_row(f"idle RTT {path} median_ms", "idle_rtt_ms", o_idle.get(path), r_idle.get(path)))
    o_links = {link.id: link for link in original.summary.links}
    r_links = {link.id: link for link in replay.summary.links}
    for link_id in sorted(o_links.keys() | r_links.keys()):
        ol, rl = o_links.get(link_id), r_links.get(link_id)
        for key in ("utilization", "mean_backlog_pkts", "queue_drops"):
            rows.append(_row(f"{link_id} {key}", key, _figure(ol, key), _figure(rl, key)))
        seeded = original.seeded_loss(link_id) and replay.seeded_loss(link_id)
        total_kind = "loss_drops_total" if seeded else "loss_drops_unseeded"
        rows.append(_row(f"{link_id} loss_drops", total_kind, _figure(ol, "loss_drops"), _figure(rl, "loss_drops")))
        if not seeded:
            continue
        o_drops, r_drops = original.loss_drops.get(link_id, {}), replay.loss_drops.get(link_id, {})
        for direction in sorted(o_drops.keys() | r_drops.keys()):
            o_count, r_count = original.arrivals(ol, direction), replay.arrivals(rl, direction)
            if o_count is None or r_count is None:
                continue
            common = min(o_count, r_count)
            o_same = [i for i in o_drops.get(direction, []) if i < common]
            r_same = [i for i in r_drops.get(direction, []) if i < common]
            row = _row(f"{link_id} {direction} loss drops in packets 0..{common - 1}", "loss_drops_seeded",
                       len(o_same), len(r_same))
            rows.append(Comparison(row.metric, row.original, row.replay, row.tolerance + " (same packet indices)",
                                   row.ok and o_same == r_same))
    o_jain, r_jain = original.summary.jain_index, replay.summary.jain_index
    if len(o_flows) > 1:
        rows.append(_row("jain_index", "jain_index", o_jain, r_jain))
    rows.append(fidelity_row(original, replay))
    return rows


def _backend_choices(env: Environment) -> dict[str, str]:
    """What did each job on a run: backends, shaping per link, CC build per algorithm, kernel, versions."""
    choices = {f"backend for {job}": str(c.backend) for job, c in env.backends.items()}
    choices |= {f"shaping of link {a.link}": str(a.backend) for a in env.shaping}
    for applied in env.congestion_control.applied:
        if applied.impl is not None:
            choices[f"{applied.cc} implementation"] = str(applied.impl)
    choices |= {f"CC build {name} sha256": digest[:12] for name, digest in env.congestion_control.builds.items()}
    choices["kernel"] = str(env.kernel)
    for tool in ("fastlab", "iperf3", "mininet", "ovs-vsctl"):
        if tool in env.tools:
            choices[f"{tool} version"] = str(env.tools[tool])
    return choices


def environment_differences(original: Environment, replay: Environment) -> list[str]:
    """One warning per backend, build or version that differs between the two runs; pure."""
    o, r = _backend_choices(original), _backend_choices(replay)
    return [f"{key}: original {o.get(key, 'none')}, here {r.get(key, 'none')}"
            for key in sorted(o.keys() | r.keys()) if o.get(key) != r.get(key)]


def table(rows: list[Comparison]) -> str:
    def num(v: float | None) -> str:
        return "-" if v is None else f"{v:.6g}"

    cells = [["metric", "original", "replay", "diff", "tolerance", "ok"]]
    def verdict(r: Comparison) -> str:
        if r.informational:
            return "-" if r.original == r.replay else "(differs)"
        return "ok" if r.ok else "DIFFERS"

    cells += [[r.metric, num(r.original), num(r.replay),
               "-" if r.diff is None or r.informational else f"{r.diff:+.4g}", r.tolerance, verdict(r)] for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(cells[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in cells)


@dataclass
class ReplayOutcome:
    point: str | None
    original_dir: Path
    replay_dir: Path
    rows: list[Comparison]
    warnings: list[str]
    fidelity: list[str] = field(default_factory=list)  # both runs' fidelity verdicts (`fidelity_notes`)

    @property
    def consistent(self) -> bool:
        return all(r.ok for r in self.rows)


def default_directory(bundle_path: Path) -> Path:
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return paths.results_root() / "replays" / f"{stamp}-{bundle_path.stem}"


def bundled_spec(run_dir: Path, what: str) -> ExperimentSpec:
    """A bundled run's spec.yaml, every file it names (a link's trace) inside the run's own folder of the
    extracted bundle; BundleError otherwise. A bundle is data someone else wrote: its spec naming a path
    of this machine (a root-only file as a trace) had replay, as root, read that file and quote its first
    bytes in the error (issue 47). The engine copies a trace into the run folder, so a real bundle's spec
    names only that copy."""
    spec = load_spec(str(RunFolder(run_dir).path(SPEC)))
    inside = run_dir.resolve()
    for where, path in trace_files(spec):
        target = Path(path)
        if target.is_symlink() or not target.resolve().is_relative_to(inside) or not target.is_file():
            raise bundle.BundleError(f"{what}: {where} names a file outside the bundle (a bundle's spec may name "
                                     "only the files it carries)")
    return spec


def replay_bundle(bundle_path: Path, out: Path, *, point: str | None = None,
                  cancel: threading.Event | None = None) -> list[ReplayOutcome]:
    """Extract `bundle_path` into out/original, rerun its run (or sweep points) into out/replay, compare.

    Raises bundle.BundleError (unusable bundle, unknown point) and whatever the engine raises.
    Writes out/replay.json with every comparison, the warnings and the verdict.
    """
    from fastlab.base.rundir import finished_points
    from fastlab.experiment.engine import run_experiment

    original = bundle.extract(bundle_path, out / "original")
    if bundle.kind_of(original) == "run":
        if point is not None:
            raise bundle.BundleError(f"--point {point}: {bundle_path.name} is a run, not a sweep")
        targets: list[tuple[str | None, Path, Path]] = [(None, original, out / "replay")]
    else:
        done = finished_points(original)
        if point is not None and point not in done:
            raise bundle.BundleError(f"--point {point}: no finished point {point!r} in the bundle "
                                     f"(points: {', '.join(done) or 'none'})")
        targets = [(p, original / "points" / p, out / "replay" / p) for p in ([point] if point else done)]
    specs = {run_dir: bundled_spec(run_dir, point_id or original.name) for point_id, run_dir, _ in targets}
    outcomes = []
    for point_id, run_dir, replay_dir in targets:
        spec_path = RunFolder(run_dir).path(SPEC)
        log.info("replaying %s: %s -> %s", point_id or original.name, spec_path, replay_dir)
        result = run_experiment(specs[run_dir], out=replay_dir, cancel=cancel)
        before, after = RunFacts.from_dir(run_dir), RunFacts.from_dir(result.directory)
        outcomes.append(ReplayOutcome(point_id, run_dir, result.directory, compare(before, after),
                                      environment_differences(before.environment, after.environment),
                                      fidelity_notes(before, after)))
    verdict = "consistent" if all(o.consistent for o in outcomes) else "differs"
    (out / "replay.json").write_text(json.dumps({
        "bundle": str(bundle_path), "verdict": verdict,
        "tolerances": {k: asdict(t) | {"as_stated": t.describe()} for k, t in TOLERANCES.items()},
        "runs": [{"point": o.point, "original": str(o.original_dir), "replay": str(o.replay_dir),
                  "verdict": "consistent" if o.consistent else "differs", "warnings": o.warnings,
                  "fidelity": o.fidelity,
                  "comparisons": [asdict(r) | {"diff": r.diff} for r in o.rows]} for o in outcomes]}, indent=1))
    return outcomes
