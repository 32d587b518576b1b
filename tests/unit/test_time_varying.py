"""Time-varying links in the spec (issue 33, item 2): `links.X.schedule` and `links.X.trace` checked as
linkemu checks them (hostile values refused in one line naming the field; a bad trace naming the field,
the file and the line, the same files linkemu refuses), planned for the emulator only, and the trace
copied into the run folder so a bundle carries it and a replay runs the copy."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from fastlab.base import paths
from fastlab.base.rundir import RunFolder, trace_name
from fastlab.define import linktrace
from fastlab.define.schema import SCHEDULE_MAX_STEPS, LinkSpec, SpecError, load_spec, parse_spec
from fastlab.define.topology import build_plan
from fastlab.experiment.engine import RunError, _copy_traces, _spec_yaml
from fastlab.plan.link_commands import Devices, choose_backend, schedule_arg
from fastlab.plan.links import ShapingError, resolve
from tests.unit.test_shaping import planned

DEVS = Devices("r1", "r1-eth1", "r2", "r2-eth1", "x2", "x2-a", "x2-b")
BASE = {"name": "tv", "topology": "dumbbell", "duration_s": 20.0, "flows": [{"src": "h1", "dst": "h2"}]}
# 12 opportunities of 1504 bytes every 10 ms: 14,438,400 b/s (linkemu's test_trace uses the same file)
TRACE_12 = b"1\n2\n2\n3\n4\n5\n5\n6\n7\n8\n9\n10\n"


def spec_error(link: dict) -> str:
    with pytest.raises(SpecError) as err:
        parse_spec(BASE | {"links": {"bottleneck": link}})
    assert "\n" not in str(err.value)
    return str(err.value)


def bottleneck(override: dict | None = None, topology: str = "dumbbell"):
    plan = build_plan(topology, {"rate_mbps": 50, "rtt_ms": 40, "buffer_bdp": 1.0} if topology == "dumbbell" else {})
    link = "bottleneck" if topology == "dumbbell" else next(iter(plan.shaped))
    return resolve(plan.shaped[link], LinkSpec.model_validate(override) if override else None)


def test_a_schedule_is_read_with_its_steps() -> None:
    spec = parse_spec(BASE | {"links": {"bottleneck": {"schedule": [
        {"at_s": 0, "rate_mbps": 20}, {"at_s": 5, "rate_mbps": 8, "delay_ms": 30}, {"at_s": 10.5, "loss": 0.01}]}}})
    steps = spec.links["bottleneck"].schedule
    assert steps is not None and [s.at_s for s in steps] == [0, 5, 10.5]
    assert (steps[1].rate_mbps, steps[1].delay_ms, steps[1].loss) == (8, 30, None)


@pytest.mark.parametrize(("steps", "field"), [
    ([{"at_s": float("nan"), "rate_mbps": 5}], "schedule[0].at_s: Input should be a finite number"),
    ([{"at_s": float("inf"), "rate_mbps": 5}], "schedule[0].at_s: Input should be a finite number"),
    ([{"at_s": 1, "rate_mbps": float("inf")}], "schedule[0].rate_mbps: Input should be a finite number"),
    ([{"at_s": 1, "rate_mbps": float("nan")}], "schedule[0].rate_mbps"),
    ([{"at_s": 1, "delay_ms": float("-inf")}], "schedule[0].delay_ms"),
    ([{"at_s": 1, "loss": float("nan")}], "schedule[0].loss"),
    ([{"at_s": 1, "rate_mbps": 10**400}], "schedule[0].rate_mbps"),
    ([{"at_s": 1, "rate_mbps": 400_001}], "schedule[0].rate_mbps: Input should be less than or equal to 400000"),
    ([{"at_s": 1, "rate_mbps": 0}], "schedule[0].rate_mbps: Input should be greater than 0"),
    ([{"at_s": 1, "delay_ms": 10_001}], "schedule[0].delay_ms"),
    ([{"at_s": -1, "rate_mbps": 5}], "schedule[0].at_s: Input should be greater than or equal to 0"),
    ([{"at_s": 1, "delay_ms": -0.5}], "schedule[0].delay_ms"),
    ([{"at_s": 1, "loss": 1.5}], "schedule[0].loss"),
    ([{"at_s": 1, "loss": -0.1}], "schedule[0].loss"),
    ([{"at_s": True, "rate_mbps": 5}], "schedule[0].at_s: Input should be a valid number"),
    ([{"at_s": "1", "rate_mbps": 5}], "schedule[0].at_s: Input should be a valid number"),
    ([{"at_s": 1, "rate_mbps": "5M"}], "schedule[0].rate_mbps"),
    ([{"at_s": 1, "rate_mbps": [5]}], "schedule[0].rate_mbps"),
    ([{"at_s": 1}], "schedule[0]: a step sets at least one of rate_mbps, delay_ms, loss"),
    ([{"at_s": 1, "rate": 5}], "schedule[0].rate: unknown field"),
    ([{"rate_mbps": 5}], "schedule[0].at_s: required field is missing"),
    (["1:rate=5"], "schedule[0]"),
    ([], "schedule: List should have at least 1 item"),
    ({"at_s": 1}, "schedule: Input should be a valid list"),
    ([{"at_s": 5, "rate_mbps": 5}, {"at_s": 5, "rate_mbps": 6}], "schedule[1].at_s (5) must be after schedule[0]"),
    ([{"at_s": 5, "rate_mbps": 5}, {"at_s": 4, "rate_mbps": 6}], "schedule[1].at_s (4) must be after"),
    ([{"at_s": 5, "rate_mbps": 5}, {"at_s": 5.0000001, "rate_mbps": 6}], "by at least 1 us"),
    ([{"at_s": 20, "rate_mbps": 5}], "links.bottleneck.schedule[0].at_s: 20 s is not before duration_s (20 s)"),
    ([{"at_s": i / 100, "delay_ms": 1} for i in range(SCHEDULE_MAX_STEPS + 1)], "List should have at most 1024"),
])
def test_hostile_schedules_are_refused_in_one_line_naming_the_field(steps: object, field: str) -> None:
    assert field in spec_error({"schedule": steps})


def test_a_reverse_schedule_is_named_as_such() -> None:
    assert "links.bottleneck.reverse.schedule[0].delay_ms" in spec_error(
        {"reverse": {"schedule": [{"at_s": 1, "delay_ms": -1}]}})
    assert "links.bottleneck.reverse.schedule[0].at_s: 30 s is not before duration_s" in spec_error(
        {"reverse": {"schedule": [{"at_s": 30, "delay_ms": 1}]}})


@pytest.mark.parametrize(("link", "why"), [
    ({"trace": "x", "rate_mbps": 5}, "trace: the trace sets the link's capacity: rate_mbps cannot be given"),
    ({"trace": "x", "policy": {"model": "token_bucket"}}, "trace: the trace sets the departures"),
    ({"trace": "x", "aqm": {"model": "codel"}}, "trace: codel cannot run on a trace link"),
    ({"trace": "x", "schedule": [{"at_s": 1, "rate_mbps": 3}]}, "schedule[0].rate_mbps: the trace sets"),
    ({"policy": {"model": "token_bucket"}, "schedule": [{"at_s": 1, "rate_mbps": 3}]},
     "schedule[0].rate_mbps: the link-layer policy sets its own rate"),
    ({"loss": {"model": "every_nth", "n": 3}, "schedule": [{"at_s": 1, "loss": 0.1}]},
     "schedule[0].loss: loss steps are Bernoulli"),
    ({"trace": ""}, "trace: String should have at least 1 character"),
    ({"trace": "a\nb"}, "trace: the file name holds a control character"),
    ({"trace": "x" * 5000}, "trace: String should have at most 4096 characters"),
    ({"trace": 5}, "trace: Input should be a valid string"),
])
def test_what_a_schedule_or_trace_cannot_run_with_is_refused_as_linkemu_does(link: dict, why: str) -> None:
    assert why in spec_error(link)


def test_combinations_linkemu_runs_are_accepted() -> None:
    parse_spec(BASE | {"links": {"bottleneck": {
        "trace": "cell.down", "aqm": {"model": "pie"}, "loss": {"model": "bernoulli", "rate": 0.01},
        "schedule": [{"at_s": 1, "delay_ms": 30, "loss": 0.02}],
        "reverse": {"policy": {"model": "token_bucket"}, "schedule": [{"at_s": 2, "delay_ms": 5}]}}}})


# --- the trace file --------------------------------------------------------------------------------

def test_a_trace_is_read_once_with_its_rate() -> None:
    assert linktrace.parse(TRACE_12, "t") == (12, 10)
    assert linktrace.parse(b"0\n0\n0\n0\n0\n0\n7\n10", "t") == (8, 10)  # the last line may lack its newline


@pytest.mark.parametrize(("data", "why"), [
    (b"", "t is empty (no timestamps)"),
    (b"\n", "t:1: empty line"),
    (b"1\n\n2\n", "t:2: empty line"),
    (b"1\n2x\n", "t:2: not a millisecond timestamp (digits only)"),
    (b"1\n1.5\n", "t:2: not a millisecond timestamp"),
    (b"-1\n", "t:1: not a millisecond timestamp"),
    (b" 1\n", "t:1: not a millisecond timestamp"),
    (b"1\r\n2\n", "t:1: not a millisecond timestamp"),
    (b"1\x00\n", "t:1: not a millisecond timestamp"),
    (b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)), "t:1: not a millisecond timestamp"),
    ("١٢\n".encode(), "t:1: not a millisecond timestamp"),  # Arabic-Indic digits: isdigit() in Unicode, not in ASCII
    (b"5\n3\n", "t:2: below the line before (timestamps must be non-decreasing)"),
    (b"0\n0\n", "t:2: the last timestamp is the period and must be above 0 ms"),
    (b"604800001\n", "t:1: above the largest timestamp, 604800000 ms"),
    (b"99999999999999999999999\n", "t:1: above the largest timestamp"),
    (b"9" * 30 + b"\n", "t:1: above the largest timestamp"),
    (b"1\n" * (linktrace.MAX_LINES + 1), "t has more than 1,048,576 lines"),
    (b"1" * (linktrace.MAX_FILE_BYTES + 1), "t is larger than 8,388,608 bytes"),
])
def test_bad_traces_are_refused_naming_the_line(data: bytes, why: str) -> None:
    with pytest.raises(linktrace.TraceError) as err:
        linktrace.parse(data, "t")
    assert str(err.value).startswith(why) and "\n" not in str(err.value)


def test_the_python_check_and_linkemus_refuse_the_same_files(tmp_path: Path) -> None:
    """One rule, two readers: each file linkemu refuses (exit 2, its --ab-trace line) Python refuses, and each
    it accepts (it goes on to the interface check) Python accepts."""
    cases = [TRACE_12, b"0\n0\n7\n10", b"", b"1\n\n2\n", b"1\r\n", b"5\n3\n", b"0\n", b"604800000\n",
             b"604800001\n", b"1\x00\n", b"\xff\xfe1\n", b"12\n" * 1000]
    for i, data in enumerate(cases):
        path = tmp_path / f"{i}.trace"
        path.write_bytes(data)
        out = subprocess.run([str(paths.linkemu_binary()), "--if-a", "lo", "--if-b", "lo", "--ab-trace", str(path)],
                             capture_output=True, text=True, timeout=10)
        linkemu_refuses = "--ab-trace" in out.stderr
        try:
            linktrace.parse(data, str(path))
            python_refuses = False
        except linktrace.TraceError:
            python_refuses = True
        assert out.returncode == 2 and linkemu_refuses == python_refuses, (data[:20], out.stderr)


def test_a_trace_file_is_named_in_its_error(tmp_path: Path) -> None:
    bad = tmp_path / "cell.down"
    bad.write_bytes(b"1\n2\nthree\n")
    with pytest.raises(ShapingError, match=rf"^links.bottleneck.trace: {bad}:3: not a millisecond") as err:
        bottleneck({"trace": str(bad)})
    assert "three" not in str(err.value)  # the line is named, never quoted (issue 47: a file may be secret)
    with pytest.raises(ShapingError, match=r"^links.bottleneck.reverse.trace: cannot read .*missing: No such file"):
        bottleneck({"reverse": {"trace": str(tmp_path / "missing")}})
    with pytest.raises(ShapingError, match=r"^links.bottleneck.trace: cannot read .*: not a regular file \(a folder\)"):
        bottleneck({"trace": str(tmp_path)})
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # opened without blocking and refused by its type: a reader of it would wait for ever
    with pytest.raises(ShapingError, match=r"^links.bottleneck.trace: cannot read .*: not a regular file \(a FIFO\)"):
        bottleneck({"trace": str(fifo)})


# --- planning ----------------------------------------------------------------------------------

def test_a_trace_link_runs_at_the_traces_rate_and_the_reverse_inherits_neither(tmp_path: Path) -> None:
    """The trace's mean rate is the direction's rate (buffers in BDP are sized at it); the reverse keeps the
    topology's rate and runs neither the schedule nor the trace."""
    trace = tmp_path / "cell.down"
    trace.write_bytes(TRACE_12)
    link = bottleneck({"trace": str(trace), "schedule": [{"at_s": 1, "delay_ms": 30}]})
    assert link.forward.rate_bps == 14_438_400 and link.forward.trace is not None
    assert link.forward.limit_pkts == 49  # ceil(14,438,400 b/s x 40 ms / (8 x 1500 B)) = ceil(48.13)
    assert link.reverse.rate_bps == 50_000_000 and link.reverse.trace is None and link.reverse.schedule == ()
    argv = list(planned(link, DEVS, seed=1, stats_interval_ms=50, has_netem=True, has_emulator=True,
                          drops_log="-").emulator_argv)
    assert argv[argv.index("--ab-trace") + 1] == str(trace.resolve())
    assert argv[argv.index("--ab-schedule") + 1] == "1000000:delay_us=30000"
    assert "--epoch-on-signal" in argv and "--ba-trace" not in argv and "--ba-schedule" not in argv


def test_a_schedule_becomes_linkemus_steps_with_plain_numbers() -> None:
    link = bottleneck({"schedule": [{"at_s": 0, "rate_mbps": 20}, {"at_s": 5.0000004, "rate_mbps": 8.5},
                                    {"at_s": 10, "delay_ms": 0.0015, "loss": 0.00001}]})
    assert schedule_arg(link.forward.schedule) == "0:rate_bps=20000000;5000000:rate_bps=8500000;" \
                                                  "10000000:delay_us=2,loss=0.00001"
    result = planned(link, DEVS, seed=1, stats_interval_ms=50, has_netem=True, has_emulator=True, drops_log="-")
    assert result.epoch and result.resolved["forward"]["schedule"][1] == {"at_s": 5.0000004, "rate_mbps": 8.5}
    plain = planned(bottleneck(), DEVS, seed=1, stats_interval_ms=50, has_netem=False, has_emulator=True,
                      drops_log="-")
    assert not plain.epoch and "--epoch-on-signal" not in plain.emulator_argv


def test_only_the_emulator_runs_a_time_varying_link() -> None:
    steps = {"schedule": [{"at_s": 1, "rate_mbps": 5}]}
    assert choose_backend(bottleneck(steps), has_netem=True, has_emulator=True) == (
        "emulator", "the link varies in time (a schedule or a mahimahi trace)")
    with pytest.raises(ShapingError, match=r"^links.bottleneck.schedule: only the emulator runs a time-varying link"):
        choose_backend(bottleneck(steps | {"backend": "tc"}), has_netem=True, has_emulator=True)
    with pytest.raises(ShapingError, match="linkemu is not built"):
        choose_backend(bottleneck(steps), has_netem=True, has_emulator=False)


def test_a_rate_step_meets_a_default_policy_in_the_merged_link() -> None:
    """The docsis topology's default link runs a token bucket: the spec's rate step on it is refused when
    the two meet (resolve), naming the link."""
    plan = build_plan("docsis", {})
    policed = [k for k, s in plan.shaped.items() if s.profile.policy is not None]
    assert policed
    with pytest.raises(ShapingError, match=rf"^links.{policed[0]}: schedule\[0\].rate_mbps: the link-layer policy"):
        resolve(plan.shaped[policed[0]], LinkSpec.model_validate({"schedule": [{"at_s": 1, "rate_mbps": 3}]}))


def test_a_rate_step_slower_than_any_link_is_refused() -> None:
    with pytest.raises(ShapingError, match=r"links.bottleneck.schedule\[0\].rate_mbps: 1e-06 Mb/s is below 1000"):
        bottleneck({"schedule": [{"at_s": 1, "rate_mbps": 1e-6}]})


# --- the run folder ----------------------------------------------------------------------------

def test_the_trace_is_copied_into_the_run_folder_and_the_spec_names_the_copy(tmp_path: Path) -> None:
    """The links run the copy, spec.yaml names it beside itself, and load_spec of that spec.yaml (what
    `fastlab bundle replay` runs) finds the copy wherever the folder is, not the original."""
    source = tmp_path / "src" / "cell.down"
    source.parent.mkdir()
    source.write_bytes(TRACE_12)
    spec = parse_spec(BASE | {"links": {"bottleneck": {"trace": str(source), "reverse": {"trace": str(source)}}}})
    folder = RunFolder(tmp_path / "run")
    folder.create()
    prep = SimpleNamespace(links={"bottleneck": bottleneck({"trace": str(source), "reverse": {"trace": str(source)}})})
    copies = _copy_traces(prep, folder)  # type: ignore[arg-type]
    copy = folder.directory / trace_name("bottleneck", "forward")
    assert copies == {("bottleneck", "forward"): copy.name, ("bottleneck", "reverse"): "trace_bottleneck_reverse.txt"}
    assert copy.read_bytes() == TRACE_12
    assert prep.links["bottleneck"].forward.trace.path == str(copy)
    (folder.directory / "spec.yaml").write_text(_spec_yaml(spec, copies))
    written = yaml.safe_load((folder.directory / "spec.yaml").read_text())
    assert written["links"]["bottleneck"]["trace"] == "trace_bottleneck_forward.txt"
    assert written["links"]["bottleneck"]["reverse"]["trace"] == "trace_bottleneck_reverse.txt"
    moved = (folder.directory).rename(tmp_path / "elsewhere")
    source.unlink()
    replayed = load_spec(str(moved / "spec.yaml"))
    assert replayed.links["bottleneck"].trace == str(moved / "trace_bottleneck_forward.txt")
    assert resolve(build_plan("dumbbell", {}).shaped["bottleneck"], replayed.links["bottleneck"]).forward.trace


def test_a_trace_changed_after_the_check_stops_the_run(tmp_path: Path) -> None:
    source = tmp_path / "cell.down"
    source.write_bytes(TRACE_12)
    prep = SimpleNamespace(links={"bottleneck": bottleneck({"trace": str(source)})})
    source.write_bytes(b"1\n2\n")
    folder = RunFolder(tmp_path / "run")
    folder.create()
    with pytest.raises(RunError, match=rf"^links.bottleneck.trace: {source.resolve()} changed since it was checked"):
        _copy_traces(prep, folder)  # type: ignore[arg-type]


def test_the_step_in_force_and_the_traces_opportunities_become_link_columns() -> None:
    """linkemu's schedule and trace state in the link samples (links.csv): the step in force and its values,
    the trace's opportunities since the flows' start; a fixed direction adds no columns."""
    from fastlab.net.shaping import emulator_samples

    base = {"rx_pkts": 10, "rx_bytes": 15140, "tx_pkts": 8, "tx_bytes": 12112, "queue_drops": 0, "loss_drops": 0,
            "backlog_pkts": 0, "backlog_bytes": 0, "delay_line_pkts": 2}
    scheduled = base | {"schedule": {"step": 1, "rate_bps": 8000000, "delay_us": 30000, "loss": 0.01}}
    traced = base | {"trace": {"opportunities": 1200, "opp_bytes": 1504, "lines": 12, "period_ms": 10},
                     "schedule": {"step": -1, "rate_bps": 14438400, "delay_us": 20000, "loss": 0}}
    fwd, rev = emulator_samples("bottleneck", {"event": "stats", "t": 1.0, "ab": scheduled, "ba": base})
    assert (fwd["schedule_step"], fwd["schedule_rate_mbps"], fwd["schedule_delay_ms"], fwd["schedule_loss"]) == \
        (1, 8.0, 30.0, 0.01)
    assert not any(k.startswith(("schedule", "trace")) for k in rev)
    fwd, _ = emulator_samples("bottleneck", {"event": "stats", "t": 1.0, "ab": traced, "ba": base})
    assert (fwd["trace_opportunities"], fwd["schedule_step"], fwd["schedule_delay_ms"]) == (1200, -1, 20.0)
    assert "schedule_rate_mbps" not in fwd


def test_a_schedules_capacity_is_its_rate_averaged_over_the_window() -> None:
    """20 Mb/s (the link's own) until 5 s, 8 until 10, 30 after: over [0, 15] (20 x 5 + 8 x 5 + 30 x 5) / 15
    = 19.33 Mb/s; over [6, 12] (8 x 4 + 30 x 2) / 6 = 15.33; a window inside one step has its rate; delay
    steps change no capacity."""
    from fastlab.plan.links import mean_rate_bps

    d = bottleneck({"rate_mbps": 20, "schedule": [{"at_s": 5, "rate_mbps": 8},
                                                  {"at_s": 10, "rate_mbps": 30, "delay_ms": 5}]}).forward
    assert mean_rate_bps(d, 0, 15) == pytest.approx(58e6 / 3)
    assert mean_rate_bps(d, 6, 12) == pytest.approx(92e6 / 6)
    assert mean_rate_bps(d, 1, 4) == 20e6 and mean_rate_bps(d, 11, 14) == 30e6
    assert mean_rate_bps(bottleneck({"schedule": [{"at_s": 1, "delay_ms": 5}]}).forward, 0, 10) == 50e6


def test_a_varying_direction_is_not_judged_as_paced() -> None:
    """The verdict's conservation check holds a paced crossing to its rate: a schedule may leave faster than
    the link's own rate (a rate step up, a delay drop bunching releases), a trace in bursts."""
    import pandas as pd

    from fastlab.measure.verdict import fidelity_counters

    rows = pd.DataFrame([{"t": t, "link": "bottleneck", "direction": d, "tx_bytes": 1000.0 * t, "backlog_bytes": 0.0}
                         for t in (0.0, 1.0) for d in ("forward", "reverse")])
    prep = SimpleNamespace(backends={"bottleneck": ("emulator", "")},
                           links={"bottleneck": bottleneck({"schedule": [{"at_s": 1, "delay_ms": 5}]})})
    counters = fidelity_counters(prep, rows, {})  # type: ignore[arg-type]
    assert not counters[("bottleneck", "forward")].paced and counters[("bottleneck", "reverse")].paced


def test_the_capacity_line_steps_with_the_schedule() -> None:
    """The charts' reference lines (report and live page): the bottleneck's capacity, and FAST's equilibrium
    at it, per span of the schedule's rate (20 until 5 s, then 8, then 30); a delay or loss step, or the
    reverse direction's, changes no line."""
    from fastlab.theory import segments

    steps = [{"at_s": 5, "rate_mbps": 8}, {"at_s": 7, "delay_ms": 30}, {"at_s": 10, "rate_mbps": 30}]
    spec = parse_spec(BASE | {"duration_s": 15.0, "flows": [{"src": "h1", "dst": "h2", "cc": "fast"}],
                              "links": {"bottleneck": {"rate_mbps": 20, "schedule": steps,
                                                       "reverse": {"schedule": [{"at_s": 3, "rate_mbps": 1}]}}}})
    spans = segments.reference_spans(spec, [])
    assert [(r["from_s"], r["to_s"], r["capacity_mbps"]) for r in spans] == [(0.0, 5.0, 20), (5.0, 10.0, 8),
                                                                              (10.0, 15.0, 30)]
    # FAST's rate is the whole capacity for one flow; its window αD/(D−d) needs D - d = α / C: shorter at 30
    assert spans[2]["fast_rtt_ms"] < spans[0]["fast_rtt_ms"] < spans[1]["fast_rtt_ms"]
    # with a cc change at 6 s too: cut there as well, the capacity carried across it
    from fastlab.theory.segments import Change

    cut = segments.reference_spans(spec, [Change(6.0, "fast", {"alpha": 60})])
    assert [(r["from_s"], r["to_s"], r["capacity_mbps"]) for r in cut] == [(0.0, 5.0, 20), (5.0, 6.0, 8),
                                                                            (6.0, 10.0, 8), (10.0, 15.0, 30)]
