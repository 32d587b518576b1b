"""The web server's memory and responsiveness under a run at the form's maxima, and 20 viewers replaying it.

A run with the form's largest sample load -- 64 flows at sample_hz 200 (the form's maxima), for
--duration seconds -- is served by the real server stack (uvicorn + webapp.asgi) in a process of its
own; its samples come from a synthetic engine that emits exactly what the engine would at that rate
(a flow sample per flow and a link sample per link direction every 1/200 s, with the engine's keys),
so the figure is the server's and not the machine's ability to carry 64 flows. Measured: the server's
resident memory (VmRSS, sampled every 0.5 s) while the run goes and while --viewers clients replay
the finished run's event stream at once, and the latency of GET /api/runs meanwhile.

`--compare REV` runs the same against the code of a git revision (a temporary worktree) and prints
both side by side, medians of --repeat.

`--runs N` (as root) is another measurement: the real server (`python -m webapp`) runs N real short
experiments in a row (real namespaces, the real engine) and the server's child processes are counted
after each; it ends with the count against the count before the first (issue 37: 60 shells after 30 runs
once). The CI test `tests/webapp/test_restart.py::test_ten_runs_through_the_server_leave_no_child`
runs the same function with 10.

Run as any user: `.venv/bin/python bench/server.py [--duration 60] [--viewers 20] [--compare REV]`;
as root: `.venv/bin/python bench/server.py --runs 30`.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
FLOWS, SAMPLE_HZ = 64, 200

SERVE = r'''
import json, sys, time
from pathlib import Path
from fastlab.experiment.engine import RunResult
from fastlab.base.record import read_environment, read_summary
from fastlab.base.rundir import RunFolder
from webapp import create_app
from webapp.asgi import make_asgi, server_config
import uvicorn

FLOWS, HZ, DURATION = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])


def engine(spec, *, out, on_sample):
    t0 = time.monotonic()
    n = 0
    while (t := time.monotonic() - t0) < DURATION:
        for f in range(1, FLOWS + 1):
            on_sample({"kind": "flow", "t": t, "flow": f"f{f}", "cwnd_pkts": 10.0 + n % 50, "ssthresh_pkts": 40.0,
                       "srtt_ms": 41.2, "min_rtt_ms": 40.0, "rttvar_ms": 0.5, "delivery_rate_mbps": 3.1,
                       "goodput_mbps": 3.0, "pacing_rate_mbps": 3.3, "bytes_acked": 1448 * n, "retransmits": 0,
                       "lost": 0, "ca_state": "open", "mss_bytes": 1448, "unacked": 12})
        for d in ("forward", "reverse"):
            on_sample({"kind": "link", "t": t, "link": "bottleneck", "direction": d, "backlog_pkts": n % 30,
                       "backlog_bytes": 1500 * (n % 30), "tx_bytes": 1500 * n, "tx_pkts": n, "queue_drops": 0,
                       "loss_drops": 0})
        n += 1
        time.sleep(max(0.0, n / HZ - (time.monotonic() - t0)))
    summary = read_summary({"flows": [{"id": f"f{f}", "src": "h1", "dst": "h2", "cc": "cubic", "throughput_mbps": 3.0}
                                      for f in range(1, FLOWS + 1)], "links": [], "jain_index": 1.0})
    RunFolder(out).write_summary(summary)
    return RunResult(out, summary, read_environment({"kernel": "synthetic", "backends": {}}))


app = create_app(results_root=Path(sys.argv[5]), runner=engine, cleanup_on_start=False)
print(app.config["CSRF_TOKEN"], flush=True)
uvicorn.Server(server_config(make_asgi(app), "127.0.0.1", int(sys.argv[1]))).run()
'''


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def request(url: str, body: dict[str, Any] | None = None, csrf: str = "") -> Any:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method="POST" if data else "GET",
                                 headers={"Content-Type": "application/json", "X-CSRF-Token": csrf})
    try:
        with urllib.request.urlopen(req, timeout=120) as resp:
            return json.loads(resp.read())
    except urllib.error.HTTPError as err:  # the server's one line, not a traceback of urllib's
        raise SystemExit(f"{url}: HTTP {err.code}: {err.read()[:500].decode(errors='replace')}") from None


def one(repo: Path, duration: float, viewers: int) -> dict[str, float]:
    """One measurement of the code in `repo`: peak RSS during the run and during the replays, the
    slowest GET /api/runs during the replays."""
    port = free_port()
    with tempfile.TemporaryDirectory() as results:
        server = subprocess.Popen([sys.executable, "-c", SERVE, str(port), str(FLOWS), str(SAMPLE_HZ), str(duration),
                                   results], cwd=repo, env={**os.environ, "PYTHONPATH": str(repo)},
                                  stdout=subprocess.PIPE, text=True)
        try:
            assert server.stdout is not None
            csrf = server.stdout.readline().strip()
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 30
            while True:
                try:
                    request(base + "/api/runs")
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
            spec = {"name": "maxima", "topology": "dumbbell", "duration_s": duration, "sample_hz": SAMPLE_HZ,
                    "topology_args": {"pairs": 1, "rate_mbps": 20, "rtt_ms": 40},
                    "flows": [{"src": "h1", "dst": "h2", "cc": "cubic", "count": FLOWS}]}
            run = request(base + "/api/runs", spec, csrf)
            during = []
            while request(f"{base}/api/runs/{run['id']}")["status"] in ("queued", "running"):
                during.append(rss_mb(server.pid))
                time.sleep(0.5)
            after, slowest, got = [], [0.0], []

            def viewer() -> None:
                with urllib.request.urlopen(f"{base}/api/runs/{run['id']}/events", timeout=600) as resp:
                    got.append(sum(len(chunk) for chunk in iter(lambda: resp.read(1 << 16), b"")))

            threads = [threading.Thread(target=viewer) for _ in range(viewers)]
            for t in threads:
                t.start()
            while any(t.is_alive() for t in threads):
                t0 = time.monotonic()
                request(base + "/api/runs")
                slowest.append(time.monotonic() - t0)
                after.append(rss_mb(server.pid))
                time.sleep(0.2)
            return {"rss_run_mb": max(during), "rss_replay_mb": max(after, default=float("nan")),
                    "runs_api_slowest_s": max(slowest), "replayed_mb": statistics.median(got) / 1e6}
        finally:
            server.terminate()
            server.wait(timeout=30)


@dataclass
class ChildCount:
    """What `count_children` saw: the server's children before the first run, the most while any run went
    (the count does see a run's own processes), after each run once reaped, and after the last."""

    before: list[str]
    most_during: int
    after_each: list[int]
    after: list[str]
    statuses: list[str]


RUN_SPEC = {"name": "child-count", "topology": "dumbbell", "duration_s": 0.5, "idle_pings": 1,
            "topology_args": {"pairs": 1, "rate_mbps": 20, "rtt_ms": 20},
            "flows": [{"src": "h1", "dst": "h2", "cc": "cubic"}]}
REAP_WAIT_S = 10  # a run's end is reported before its worker has reaped the last shells: wait at most this


def count_children(count: int, results: Path, log: Path,
                   on_run: Callable[[int, str, int, int], None] = lambda *_: None) -> ChildCount:
    """The real server (`python -m webapp`, as a user starts it) runs `count` real 0.5-s experiments in a
    row (real namespaces, the real engine); its child processes are counted while each runs and after
    it, once the count is back to the one before the first run or REAP_WAIT_S has passed (root)."""
    sys.path.insert(0, str(REPO))
    from fastlab.net.runstate import child_processes

    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "webapp", "--port", str(port)], cwd=REPO,
                              env={**os.environ, "PYTHONPATH": str(REPO), "FASTLAB_RESULTS": str(results)},
                              stdout=log.open("w"), stderr=subprocess.STDOUT)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(base + "/new", timeout=5) as resp:
                    page = resp.read().decode()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        csrf = page.split('name="csrf-token" content="', 1)[1].split('"', 1)[0]
        seen = ChildCount(child_processes(server.pid), 0, [], [], [])
        for i in range(count):
            run = request(base + "/api/runs", RUN_SPEC, csrf)
            ends = time.monotonic() + 120  # a 0.5-s run: bounded whatever happens
            while (row := request(f"{base}/api/runs/{run['id']}"))["status"] in ("queued", "running"):
                seen.most_during = max(seen.most_during, len(child_processes(server.pid)))
                assert time.monotonic() < ends, f"run {run['id']} still {row['status']} after 120 s"
                time.sleep(0.1)
            reaped = time.monotonic() + REAP_WAIT_S
            while len(now := child_processes(server.pid)) > len(seen.before) and time.monotonic() < reaped:
                time.sleep(0.1)
            seen.after_each.append(len(now))
            seen.statuses.append(row["status"])
            on_run(i, row["status"], seen.most_during, len(now))
        seen.after = child_processes(server.pid)
        return seen
    finally:
        server.terminate()
        server.wait(timeout=60)


def runs_leave_no_child(count: int) -> int:
    """`--runs`: count_children, printed."""
    with tempfile.TemporaryDirectory() as tmp:
        def said(i: int, status: str, most: int, now: int) -> None:
            print(f"run {i + 1}/{count}: {status}, server children {most} at most while runs went, {now} after",
                  flush=True)

        seen = count_children(count, Path(tmp) / "results", Path(tmp) / "server.log", on_run=said)
    left = sorted(set(seen.after) - set(seen.before))
    print(f"server children: {len(seen.before)} before the first run, {len(seen.after)} after {count} runs "
          f"(most after any run: {max(seen.after_each)})" + (f"; left: {left}" if left else ""))
    return 0 if not left and all(s == "done" for s in seen.statuses) else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--viewers", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--compare", metavar="REV", help="the same against this git revision")
    parser.add_argument("--runs", type=int, metavar="N",
                        help="instead: N real runs through the real server, its children counted (root)")
    args = parser.parse_args()
    if args.runs is not None:
        if not 1 <= args.runs <= 500:
            parser.error("--runs: 1..500")
        if os.geteuid() != 0:
            parser.error("--runs runs real experiments: run it as root")
        return runs_leave_no_child(args.runs)
    codes = {"this checkout": REPO}
    worktree = None
    if args.compare:
        worktree = Path(tempfile.mkdtemp(prefix="fastlab-compare-")) / "tree"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(worktree), args.compare],
                       check=True, capture_output=True)
        # the old code checks its spec against what its checkout offers: its own link emulator, built
        subprocess.run(["make", "-s", "-C", str(worktree / "linkemu")], check=True, capture_output=True)
        codes = {args.compare: worktree, **codes}
    try:
        rows = {}
        for name, repo in codes.items():
            results = [one(repo, args.duration, args.viewers) for _ in range(args.repeat)]
            rows[name] = {k: statistics.median(r[k] for r in results) for k in results[0]}
        print(f"{FLOWS} flows at {SAMPLE_HZ} Hz for {args.duration:g} s, then {args.viewers} viewers replaying it "
              f"(medians of {args.repeat}):")
        keys = list(next(iter(rows.values())))
        print("code".ljust(16) + "".join(k.rjust(20) for k in keys))
        for name, row in rows.items():
            print(name[:16].ljust(16) + "".join(f"{row[k]:20.2f}" for k in keys))
    finally:
        if worktree is not None:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(worktree)],
                           check=False, capture_output=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
