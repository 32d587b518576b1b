"""The supervised-process helper (`fastlab.base.supervised`), on real child processes (small Python
programs standing in for linkemu, flowtool, the CC event streams and the controller app)."""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

import pytest

from fastlab.base.supervised import STDERR_KEEP_CHARS, Supervised, json_objects, stop_all


class State:
    """Records what RunState.add_pid is given."""

    def __init__(self) -> None:
        self.pids: list[tuple[int, str]] = []

    def add_pid(self, pid: int, what: str) -> None:
        self.pids.append((pid, what))


def py(code: str) -> list[str]:
    return [sys.executable, "-c", code]


TALKER = ("import json, sys\n"
          "print(json.dumps({'event': 'ready'}), flush=True)\n"
          "print('not json', flush=True)\n"
          "print('[1, 2]', flush=True)\n"
          "print(json.dumps({'event': 'stats', 'n': 1}), flush=True)\n"
          "sys.stderr.write('bye\\n')\n"
          "sys.exit(3)\n")


def test_messages_pid_and_exit_are_handed_over() -> None:
    state, got, ended = State(), [], threading.Event()
    exits: list[tuple[int | None, str]] = []

    def on_exit(tool: Supervised) -> None:
        exits.append((tool.returncode, tool.stderr_text()))
        ended.set()

    tool = Supervised.start("talker", py(TALKER), state=state, on_message=got.append, on_exit=on_exit)
    assert ended.wait(20)
    assert state.pids == [(tool.pid, "talker")]  # recorded for `fastlab cleanup`
    assert got == [{"event": "ready"}, {"event": "stats", "n": 1}]  # objects only, in order
    assert exits == [(3, "bye")]
    assert tool.stop(1) == 3 and not tool.running() and tool.cpu_seconds() is None


def test_json_objects_skips_what_is_not_an_object() -> None:
    assert list(json_objects(['{"a": 1}\n', "{cut", "7", "null", '{"b": [2]}'])) == [{"a": 1}, {"b": [2]}]


def test_a_process_that_ignores_sigterm_is_killed_after_the_grace() -> None:
    stubborn = py("import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                  "print('{}', flush=True)\ntime.sleep(60)\n")
    seen = threading.Event()
    tool = Supervised.start("stubborn", stubborn, state=State(), on_message=lambda _m: seen.set())
    assert seen.wait(20)  # its handler is installed before it prints
    assert tool.cpu_seconds() is not None  # alive: /proc has its CPU time
    begin = time.monotonic()
    assert tool.stop(0.5) == -9  # SIGKILL
    assert 0.4 < time.monotonic() - begin < 10


def test_the_tools_own_stop_command_is_used_first() -> None:
    """Like the controller app: it stops when asked on stdin and exits 0; no signal needed."""
    polite = py("import json, sys\nprint(json.dumps({'event': 'up'}), flush=True)\n"
                "for line in sys.stdin:\n"
                "    if json.loads(line).get('cmd') == 'stop':\n"
                "        print(json.dumps({'event': 'stopping'}), flush=True)\n"
                "        sys.exit(0)\n"
                "sys.exit(5)\n")
    got: list[dict[str, Any]] = []
    up = threading.Event()

    def on_message(msg: dict[str, Any]) -> None:
        got.append(msg)
        up.set()

    tool = Supervised.start("polite", polite, state=State(), on_message=on_message, stdin=True,
                            ask_stop=lambda t: t.send({"cmd": "stop"}))
    assert up.wait(20)
    assert tool.stop(10) == 0  # a SIGTERM would have given -15
    assert got == [{"event": "up"}, {"event": "stopping"}]  # the reader read to the end before stop returned


def test_stop_all_stops_many_in_about_one_grace_period() -> None:
    sleepers = [Supervised.start(f"sleeper {i}", py("import time\ntime.sleep(60)\n"), state=State())
                for i in range(4)]
    begin = time.monotonic()
    stop_all(sleepers, 5)
    assert all(s.returncode == -15 for s in sleepers)  # SIGTERM, none needed the kill
    assert time.monotonic() - begin < 5  # asked together: no one waited for the others' grace


def test_a_tool_that_writes_much_to_stderr_is_not_blocked_and_its_tail_is_kept() -> None:
    """1 MiB of warnings through a 64 KiB pipe: read as it comes, the tool runs to its end and says
    its last lines; only the tail (STDERR_KEEP_CHARS) is kept."""
    chatty = ("import json, sys\n"
              "for i in range(16384):\n    sys.stderr.write(f'warning {i:06d} ' + 'x' * 48 + '\\n')\n"
              "sys.stderr.write('the real error\\n')\n"
              "print(json.dumps({'event': 'done'}), flush=True)\n")
    got: list[Any] = []
    ended = threading.Event()
    tool = Supervised.start("chatty", py(chatty), state=State(), on_message=got.append,
                            on_exit=lambda _t: ended.set())
    assert ended.wait(20), "blocked on a full stderr pipe"
    text = tool.stderr_text()
    assert got == [{"event": "done"}] and text.endswith("the real error")
    assert "warning 016383" in text and "warning 000000" not in text
    assert len(text) <= STDERR_KEEP_CHARS


def test_teardown_runs_every_stop_in_reverse_and_raises_the_first_failure() -> None:
    """The engine's teardown: stops run last-registered first, every one even after failures, and
    the first failure comes out as a RunError; a clean teardown lets the run's own error through."""
    import pytest

    from fastlab.experiment.engine import RunError, Teardown

    ran: list[str] = []

    def fails(name: str) -> Any:
        def stop() -> None:
            ran.append(name)
            raise OSError(f"{name} would not stop")
        return stop

    with pytest.raises(RunError, match="teardown: net would not stop"), Teardown() as teardown:
        teardown.stop(lambda: ran.append("state"))
        teardown.stop(fails("bus"))
        teardown.stop(fails("net"))
        teardown.stop(lambda: ran.append("traffic"))
    assert ran == ["traffic", "net", "bus", "state"]
    with pytest.raises(RunError, match="cancelled"), Teardown() as teardown:
        teardown.stop(lambda: ran.append("clean"))
        raise RunError("cancelled")
    assert ran[-1] == "clean"


def test_a_late_sender_stops_at_the_runs_planned_end() -> None:
    """fastlab.run.flowtool.stop_time: a sender that started 3 s late (an interpreter starting on a slow or
    emulated machine) stops at the run's end, not 3 s after it; one given no end runs its duration; an
    end beyond the duration does not extend it."""
    from fastlab.run.flowtool import stop_time

    assert stop_time(103.0, 25.0, 125.0) == 125.0
    assert stop_time(100.0, 25.0, None) == 125.0
    assert stop_time(100.0, 25.0, 200.0) == 125.0


@pytest.mark.parametrize("line, want", [
    ('{"start_at": 12.5, "stop_at": 37.5}\n', (12.5, 37.5)),
    ("", None),  # the run ended before the flows' time zero: stdin closed
    ("go\n", None), ('{"start_at": 1}\n', None), ('{"start_at": "x", "stop_at": 2}\n', None), ("[1, 2]\n", None),
])
def test_a_ready_sender_starts_when_told_and_only_then(line: str, want: tuple[float, float] | None) -> None:
    """fastlab.run.flowtool.wait_for_go: the traffic layer's one line (start and stop on the shared monotonic
    clock); anything else, an empty line included, means no flow to send."""
    from fastlab.run.flowtool import wait_for_go

    assert wait_for_go(line) == want
