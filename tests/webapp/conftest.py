"""Fixtures of the web app tests: a spec, an app without worker, a real server in a thread, a fake engine,
Debian chromium through Playwright, and a tiny lab folder (independent of the repository's labs)."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fastlab.base.record import read_environment, read_summary
from fastlab.base.rundir import RunFolder
from fastlab.experiment.engine import RunResult
from webapp import create_app

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--headless"]
# points of the first flow trace of the live throughput chart
FLOW_POINTS = """() => { const d = document.getElementById('chart-goodput').data || [];
  const t = d.find(x => !x.name.includes('link')); return t ? t.x.length : 0; }"""


def good_spec(**changes: Any) -> dict[str, Any]:
    spec = {"name": "webtest", "topology": "dumbbell", "topology_args": {"rate_mbps": 20, "rtt_ms": 40},
            "duration_s": 6, "flows": [{"src": "h1", "dst": "h2", "cc": "fast", "cc_args": {"alpha": 30}}],
            "links": {"bottleneck": {"loss": {"model": "bernoulli", "rate": 0.01}}}}
    spec.update(changes)
    return spec


def queued_count(app: Any) -> int:
    from fastlab.service.store import connect
    with connect(app.config["DATABASE"]) as conn:
        return conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0]


@pytest.fixture
def app(tmp_path: Path) -> Any:
    return create_app(results_root=tmp_path / "results", start_worker=False)


@pytest.fixture
def client(app: Any) -> Any:
    return app.test_client()


@pytest.fixture
def csrf(app: Any) -> dict[str, str]:
    return {"X-CSRF-Token": app.config["CSRF_TOKEN"]}


class FakeEngine:
    """Stands in for run_experiment: emits flow/link samples at 20 Hz for `seconds`, writes result files."""

    def __init__(self, seconds: float = 3.0) -> None:
        self.seconds = seconds
        self.calls: list[str] = []
        self.epoch = time.time()  # sample t = wall time - epoch, so clients can measure latency

    def __call__(self, spec: Any, *, out: Path, on_sample: Any) -> RunResult:
        self.calls.append(spec.name)
        logging.getLogger("fastlab.experiment.engine").info("fake run starting")  # as the engine reports progress
        t0 = time.monotonic()
        n = 0
        while time.monotonic() - t0 < self.seconds:
            t = time.time() - self.epoch
            on_sample({"kind": "flow", "t": t, "flow": "f1", "cwnd_pkts": 10 + n, "srtt_ms": 40.0,
                       "goodput_mbps": 5.0})
            on_sample({"kind": "link", "t": t, "link": "bottleneck", "direction": "forward", "backlog_pkts": n % 7,
                       "tx_bytes": 1000 * n})
            n += 1
            time.sleep(0.05)
        summary = read_summary({"flows": [{"id": "f1", "src": "h1", "dst": "h2", "cc": "cubic", "throughput_mbps": 5.0,
                                           "mean_rtt_ms": 40, "min_rtt_ms": 40, "retransmits": 0}],
                                "links": [{"id": "bottleneck", "capacity_mbps": 20, "utilization": 0.25,
                                           "mean_backlog_pkts": 3, "drops": 0}], "jain_index": 1.0})
        folder = RunFolder(out)
        folder.write_summary(summary)
        folder.write_report("<html>fake report</html>")
        return RunResult(out, summary, read_environment({"kernel": "fake", "backends": {}}))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LiveServer:
    """The app served as `python -m webapp` serves it (uvicorn, webapp.asgi in front) in a thread on a
    free loopback port."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        from webapp.asgi import make_asgi, server_config

        self.app = app
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(server_config(make_asgi(app), "127.0.0.1", self.port,
                                                   timeout_graceful_shutdown=2))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the test server did not start")
            time.sleep(0.02)

    def close(self) -> None:
        self.app.extensions["fastlab_runs"].stop()
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture
def live_server_factory() -> Iterator[Any]:
    servers: list[LiveServer] = []

    def make(app: Any) -> LiveServer:
        servers.append(LiveServer(app))
        return servers[-1]

    yield make
    for s in servers:
        s.close()


def wait_status(app: Any, run_id: str, statuses: tuple[str, ...], timeout: float) -> str:
    from fastlab.service.store import connect
    deadline = time.monotonic() + timeout
    status = "?"
    while time.monotonic() < deadline:
        with connect(app.config["DATABASE"]) as conn:
            status = conn.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()["status"]
        if status in statuses:
            return status
        time.sleep(0.2)
    raise AssertionError(f"run {run_id} still {status} after {timeout} s")


@pytest.fixture
def browser() -> Iterator[Any]:
    if os.geteuid() != 0:
        pytest.fail("the browser tests run real experiments: run them as root")
    if not Path(CHROMIUM).exists():
        pytest.fail("Debian chromium is missing: apt-get install -y chromium (scripts/setup.sh installs it)")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


# --- a tiny lab ------------------------------------------------------------------------------------
# One cubic flow on a 20 Mb/s, 20 ms dumbbell: the short form runs 4 s (about 7 s wall time here).
# Its checkpoints: one that passes, the same figure against an impossible range (must FAIL with the
# same measured value) and one that reads a flow the run does not have (cannot evaluate -> FAIL).
# The handout carries HTML and a javascript: link that the page must not pass through.
TINY_HANDOUT = """\
# Tiny lab

A handout with an equation `w = alpha·D/(D−d)`, typeset $w = \\alpha D/(D-d)$, one that must not
run $\\text{<img src=x onerror=window.pwned=4>}$, and a table:

| rate | RTT |
|------|-----|
| 20 Mb/s | 20 ms |

<script>window.pwned = 1</script>
<img src="x" onerror="window.pwned = 2">
[a link that must not run](javascript:window.pwned=3)

## Steps

The whole lab runs in 10 s: `sudo fastlab lab run 1` (one step alone with `--step ID`; `--short` runs
the short form).

1. **Predict.** Which utilization do you expect on a 1-BDP buffer?
2. **Fill:** `sudo fastlab lab run 1 --step fill`. In `report.html` look at the queue. Try
   `sudo fastlab run labs/01-tiny/specs/one-cubic.yaml --set duration_s=5`, or the step with
   `--set flows.0.cc=reno`.
3. **No such CC:** `--step nocc` fails before anything runs.

Re-check a finished run with `fastlab lab check 1` (the latest) or `--run DIR`.

## Questions

1. Why does the bottleneck's utilization stay below 1?
2. What would Reno do here?
"""
TINY_LAB = """\
title: Tiny lab of the web app tests
summary: One cubic flow fills a 20 Mb/s dumbbell.
minutes: 0.5
steps:
  - id: fill
    title: One cubic flow fills the bottleneck
    spec: specs/one-cubic.yaml
    set: [duration_s=8]
    short: [duration_s=4]
    checkpoints:
      - check: utilization
        args: {lo: 0.8, hi: 1.02}
      - check: utilization
        name: impossible utilization
        args: {lo: 1.5, hi: 2.0}
      - check: throughput
        name: missing flow
        args: {flow: f9, lo: 1, hi: 30}
  - id: nocc
    title: A step whose congestion control this machine does not have
    spec: specs/one-cubic.yaml
    set: [flows.0.cc=nosuchcc]
    checkpoints:
      - check: utilization
        args: {lo: 0.8, hi: 1.02}
"""
TINY_SPEC = """\
name: tiny-cubic
topology: dumbbell
topology_args: {rate_mbps: 20, rtt_ms: 20, buffer_bdp: 1.0}
duration_s: 8
seed: 1
flows:
  - {src: h1, dst: h2, cc: cubic}
"""
TINY_CHECKPOINTS = """\
from fastlab.labs.kit import CheckResult, StepRun, checkpoint, within

WHY = "one loss-based flow keeps a 1-BDP buffer from emptying after slow start (80 RTTs of 20 ms in 4 s)"


@checkpoint
def utilization(run: StepRun, lo: float, hi: float) -> CheckResult:
    return within("bottleneck utilization", run.link_summary("bottleneck").utilization, lo, hi, WHY)


@checkpoint
def throughput(run: StepRun, flow: str, lo: float, hi: float) -> CheckResult:
    return within(f"{flow} throughput", run.flow_summary(flow).throughput_mbps, lo, hi, WHY, "Mb/s")
"""


def write_lab(root: Path, name: str, handout: str, lab: str, specs: dict[str, str], checkpoints: str) -> Path:
    """A lab folder `name` under the labs root `root` (its handout, lab.yaml, specs/ and checkpoints.py);
    returns the root."""
    folder = root / name
    (folder / "specs").mkdir(parents=True)
    (folder / "README.md").write_text(handout)
    (folder / "lab.yaml").write_text(lab)
    for file, text in specs.items():
        (folder / "specs" / file).write_text(text)
    (folder / "checkpoints.py").write_text(checkpoints)
    return root


def write_tiny_lab(root: Path) -> Path:
    """labs root with 01-tiny (see above); returns the root."""
    return write_lab(root, "01-tiny", TINY_HANDOUT, TINY_LAB, {"one-cubic.yaml": TINY_SPEC}, TINY_CHECKPOINTS)


@pytest.fixture
def tiny_labs(tmp_path: Path) -> Path:
    return write_tiny_lab(tmp_path / "labs")


def wait_until(page: Any, expression: str, timeout: float = 30_000) -> None:
    """Poll a JS expression until it is truthy, from Python through page.evaluate (CDP, which the
    app's Content-Security-Policy does not govern): Playwright's own wait_for_function evaluates
    its predicate with eval() inside the page, which that policy rightly forbids."""
    deadline = time.monotonic() + timeout / 1000
    while not page.evaluate(expression):
        if time.monotonic() > deadline:
            raise AssertionError(f"not true within {timeout / 1000:g} s: {expression}")
        time.sleep(0.1)


def watch(page) -> list[str]:
    """The page's console errors and warnings and uncaught exceptions, as they come. The 422s of /api/validate
    while a field is wrong are Chromium's resource log, not the page's errors."""
    problems: list[str] = []
    page.on("console", lambda m: m.type in ("error", "warning") and "status of 422" not in m.text
            and problems.append(f"console {m.type}: {m.text}"))
    page.on("pageerror", lambda exc: problems.append(f"uncaught: {exc}"))
    return problems


def form_with_preset(tmp_path: Path, live_server_factory, browser, preset: str, worker: bool = False,
                     viewport: tuple[int, int] = (1024, 768), app: Any = None) -> tuple[Any, list[str]]:
    """The new-run form (by default at 1024x768, a projector) with a preset loaded and valid, and its page's
    problems; `worker`: the app runs what is queued (a real experiment), else only validates; `app`: served
    instead of a new one (the test then looks into its queue)."""
    app = app or create_app(results_root=tmp_path, start_worker=worker, cleanup_on_start=False)
    server = live_server_factory(app)
    page = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]}).new_page()
    problems = watch(page)
    page.goto(server.url + "/new")
    page.wait_for_selector("body[data-ready='1']", timeout=20_000)
    page.select_option("#preset", preset)
    page.click("#load-preset")
    wait_until(page, "document.getElementById('validation').className === 'valid'", timeout=10_000)
    return page, problems
