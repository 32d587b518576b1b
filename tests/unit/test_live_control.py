"""fastlab.run.ccruntime.LiveControl's refusals, without a network (the accepted path runs for real in
tests/webapp/test_browser.py): each is one line naming the field, and nothing reaches the tool."""

from __future__ import annotations

import dataclasses

import pytest

from fastlab.net.runstate import RunState
from fastlab.plan.flows import HostParams
from fastlab.run.ccload import default_registry
from fastlab.run.ccruntime import CCRuntime, LiveControl, LiveControlError


class NoTool:
    """Stands in for the loader only to prove that no refused change reaches it."""

    impl = "bpf"

    def set(self, args, netns_pid=None):  # noqa: ANN001, ANN201
        raise AssertionError(f"a refused change reached the tool: {args}")

    def check_args(self, args):  # noqa: ANN001, ANN201
        """What only the tool refuses is not what these changes test."""


@pytest.fixture
def live() -> LiveControl:
    registry = default_registry()
    for name in ("fast", "hstcp"):
        registry.register(dataclasses.replace(registry.lookup(name), loader=NoTool()))
    runtime = CCRuntime(registry, RunState("flzzzz"), lambda _kind, _sample: None,
                        [HostParams("h1", "fast", {"alpha": 20}), HostParams("h3", "hstcp", {})], {})
    control = LiveControl()
    control.bind(runtime, {"h1": 1, "h3": 3}, 0.0)
    return control


@pytest.mark.parametrize("host, cc, args, message", [
    ("h2", "fast", {"alpha": 60}, "host: 'h2' runs none of fastlab's algorithms in this run (hosts: h1, h3)"),
    ("h1", "hstcp", {"max_ssthresh": 10}, "cc: h1 runs fast, not 'hstcp'"),
    ("h1", "fast", {}, "args: give at least one parameter"),
    ("h1", "fast", {"alpha": 0}, "args: alpha=0 is out of range [1, 10000] packets"),
    ("h1", "fast", {"alpha": float("nan")}, "args: alpha must be a finite number"),
    ("h1", "fast", {"alpha": 1e400}, "args: alpha must be a finite number"),
    ("h1", "fast", {"alpha": True}, "args: alpha must be a number"),
    ("h1", "fast", {"period": "5us"}, "args: period=5us is out of range"),
    ("h1", "fast", {"colour": 3}, "args: "),
    ("h3", "hstcp", {"low_window": 50}, "args: low_window of hstcp are global for the run, not per host"),
])
def test_refused_changes_name_the_field_and_change_nothing(live: LiveControl, host: str, cc: str, args: dict,
                                                           message: str) -> None:
    with pytest.raises(LiveControlError) as err:
        live.set(host, cc, args)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_nothing_changes_outside_the_flow_phase(live: LiveControl) -> None:
    live.unbind()
    with pytest.raises(LiveControlError, match="not sending"):
        live.set("h1", "fast", {"alpha": 60})
    with pytest.raises(LiveControlError, match="not sending"):
        LiveControl().set("h1", "fast", {"alpha": 60})


class Accepts:
    """Stands in for the loader: takes every change (counted), as the real tool would."""

    impl = "bpf"

    def __init__(self) -> None:
        self.calls = 0

    def set(self, args, netns_pid=None):  # noqa: ANN001, ANN201
        self.calls += 1
        return args

    def check_args(self, args):  # noqa: ANN001, ANN201
        """Takes every value, as set does."""


def test_live_changes_are_rate_limited_per_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each live change is a tool process and an environment entry: at most LIVE_CHANGES_PER_S a second
    and LIVE_CHANGES_MAX a run; the refused ones reach nothing (issue 37: 256 changes in 0.92 s)."""
    from fastlab.run import ccruntime

    registry = default_registry()
    tool = Accepts()
    registry.register(dataclasses.replace(registry.lookup("fast"), loader=tool))
    runtime = CCRuntime(registry, RunState("flzzzz"), lambda _kind, _sample: None,
                        [HostParams("h1", "fast", {"alpha": 20})], {})
    control = LiveControl()
    clock = [100.0]
    monkeypatch.setattr(ccruntime.time, "monotonic", lambda: clock[0])
    control.bind(runtime, {"h1": 1}, 0.0)
    for _ in range(ccruntime.LIVE_CHANGES_PER_S):
        control.set("h1", "fast", {"alpha": 30})
    with pytest.raises(ccruntime.LiveControlBusy, match="at most 5 live changes a second"):
        control.set("h1", "fast", {"alpha": 30})
    clock[0] += 1.01
    control.set("h1", "fast", {"alpha": 40})  # a second later: room again
    assert tool.calls == ccruntime.LIVE_CHANGES_PER_S + 1
    while tool.calls < ccruntime.LIVE_CHANGES_MAX:
        clock[0] += 1.0
        control.set("h1", "fast", {"alpha": 50})
    clock[0] += 10.0
    with pytest.raises(ccruntime.LiveControlBusy, match="taken its 200 live changes"):
        control.set("h1", "fast", {"alpha": 60})
    assert tool.calls == ccruntime.LIVE_CHANGES_MAX and len(runtime.applied) == ccruntime.LIVE_CHANGES_MAX
