"""The pure parts of the service's one Dask path (fastlab.service.cluster, fastlab.service.worker): what a
worker offers and a run asks for, sample batching, the relay's lag figures and its message handling, and
importing a worker's bundle as a run (hostile bundles: zip slip, oversize, altered or missing manifest -> one
line, nothing stored)."""

from __future__ import annotations

import hashlib
import io
import math
import threading
import time
import zipfile
from pathlib import Path
from typing import Any

import msgpack
import pytest

from fastlab.experiment.cost import MAX_RUNS, Cost, Figures
from fastlab.results import bundle
from fastlab.service import worker
from fastlab.service.cluster import Cluster, Relayed, import_bundle, lag_figures, percentile
from fastlab.service.worker import SampleBatcher, event, resources_arg, run_resources, worker_resources
from tests.webapp.test_compare import write_run

RUN = "20261127-100000-run-wabc001"


def test_a_worker_offers_one_machine_the_run_slots_and_its_budget() -> None:
    offered = worker_resources(Figures(budget_cores=1.0))
    assert offered == {"machine": 1, "runs": MAX_RUNS, "cores": 1.0}
    assert resources_arg(offered) == f"machine=1,runs={MAX_RUNS},cores=1"
    assert resources_arg(worker_resources(Figures(budget_cores=2.5))) == f"machine=1,runs={MAX_RUNS},cores=2.5"


@pytest.mark.parametrize("cost, largest, asked", [
    (Cost(0.27), 1.0, {"runs": 1, "cores": 0.27}),  # a run slot and its predicted cores
    (Cost(0.8), 0.5, {"runs": 1, "cores": 0.5}),  # never more than the largest worker offers (or it waits forever)
    (Cost(0.0), 1.0, {"runs": 1}),  # no prediction (its spec no longer reads): a slot only
    (Cost(-3.0), 1.0, {"runs": 1}),
    (Cost(math.nan), 1.0, {"runs": 1}),
    (Cost(math.inf), 1.0, {"runs": 1, "cores": 1.0}),
    (Cost(1.6, alone="full scale"), 1.0, {"runs": MAX_RUNS, "machine": 1}),  # nothing beside it
])
def test_a_run_asks_for_a_slot_and_its_predicted_cores(cost: Cost, largest: float, asked: dict[str, float]) -> None:
    assert run_resources(cost, largest) == asked


def test_samples_are_taken_in_bounded_batches_in_order_from_any_thread() -> None:
    batcher = SampleBatcher()

    def emit(thread: int) -> None:
        for n in range(1000):
            batcher.add({"kind": "flow", "t": n, "flow": f"f{thread}"})

    threads = [threading.Thread(target=emit, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(batcher) == 4000
    first, made = batcher.take(limit=2500)
    assert len(first) == len(made) == 2500 and made == sorted(made)
    rest, _ = batcher.take(limit=2500)
    assert len(rest) == 1500 and len(batcher) == 0 and batcher.take() == ([], [])
    for flow in ("f0", "f1", "f2", "f3"):  # each thread's samples keep their order
        ts = [s["t"] for s in first + rest if s["flow"] == flow]
        assert ts == list(range(1000))


def test_a_relay_message_is_msgpack_data() -> None:
    msg = event(RUN, "tcp://127.0.0.1:1 pid 7", 3, [{"kind": "flow", "t": 0.1, "cwnd_pkts": 10, "x": None}], [1.5],
                worker="tcp://127.0.0.1:1")
    assert msgpack.unpackb(msgpack.packb(msg)) == msg


def test_lag_percentiles() -> None:
    lags = [i / 1000 for i in range(1, 101)]  # 1..100 ms
    assert percentile(lags, 0.5) == pytest.approx(0.051) and percentile(lags, 0.99) == pytest.approx(0.099)
    assert lag_figures(lags) == {"p50_ms": 51.0, "p99_ms": 99.0, "max_ms": 100.0}
    assert lag_figures([]) == {"p50_ms": None, "p99_ms": None, "max_ms": None}


class SubscribeOnly:
    """Stands in for the Dask client in these pure tests: the relay handler's logic needs none (the
    integration test, tests/integration/test_web_cluster.py, runs it on a real scheduler)."""

    def subscribe_topic(self, topic: str, handler: Any) -> None:
        self.topic = topic


def test_relay_messages_reach_their_run_only_from_its_first_attempt() -> None:
    cluster = Cluster(SubscribeOnly(), "tcp://127.0.0.1:1")
    samples: list[dict[str, Any]] = []
    logs: list[dict[str, Any]] = []
    cluster._runs[RUN] = Relayed(samples.append, logs.append)
    start = event(RUN, "A", 0, [], [], worker="tcp://w:1")
    cluster._on_event((0.0, start))
    assert cluster._runs[RUN].worker == "tcp://w:1"
    now = time.time()
    as_dask_delivers = msgpack.unpackb(msgpack.packb(event(RUN, "A", 1, [{"kind": "flow", "t": 1},
                                                                         {"kind": "log", "msg": "hi"}],
                                                           [now - 0.2, now - 0.1])), use_list=False)
    assert isinstance(as_dask_delivers["samples"], tuple)  # distributed unpacks lists as tuples
    cluster._on_event((0.0, as_dask_delivers))
    cluster._on_event((0.0, event(RUN, "B", 0, [{"kind": "flow", "t": 99}], [now], worker="tcp://w:2")))  # a rerun
    for hostile in (None, "text", {"run": [1]}, {"run": RUN, "attempt": "A", "samples": "xx", "made": 5},
                    {"run": RUN, "attempt": "A", "samples": [1, None, {"kind": "flow", "t": 2}],
                     "made": ["x", 1, None]},
                    (0.0,), {"run": "other"}):
        cluster._on_event((0.0, hostile))  # never raises (the client's thread), uses what is a sample
    assert [s["t"] for s in samples] == [1, 2] and logs == [{"kind": "log", "msg": "hi"}]
    relayed = cluster._runs[RUN]
    assert relayed.samples == 2 and len(relayed.lags) == 1 and 0.2 <= relayed.lags[0] < 5


def bundle_of(tmp_path: Path) -> bytes:
    write_run(tmp_path / "src", RUN, "fast-a10", "fast", 10, 18.0)
    return bundle.export(tmp_path / "src" / RUN, tmp_path / "run.zip").read_bytes()


def a_run_dir(tmp_path: Path) -> Path:
    run_dir = tmp_path / "results" / RUN
    run_dir.mkdir(parents=True)
    (run_dir / "partial.jsonl").write_text('{"kind": "flow", "t": 0}\n')
    return run_dir


def test_a_verified_bundle_becomes_the_run_folder_beside_its_partial_traces(tmp_path: Path) -> None:
    run_dir = a_run_dir(tmp_path)
    import_bundle(bundle_of(tmp_path), run_dir)
    names = {p.name for p in run_dir.iterdir()}
    assert {"spec.yaml", "environment.json", "summary.json", "flows.csv", "links.csv", "partial.jsonl"} == names
    assert (run_dir / "partial.jsonl").read_text() == '{"kind": "flow", "t": 0}\n'  # the server's, kept
    assert (run_dir / "flows.csv").read_bytes() == (tmp_path / "src" / RUN / "flows.csv").read_bytes()


def zip_with(members: dict[str, bytes], manifest: dict[str, bytes] | None = None, top: str = RUN) -> bytes:
    """A zip of `members` (names as given) with a manifest over `manifest` (default: the members)."""
    listed = manifest if manifest is not None else {n.removeprefix(top + "/"): d for n, d in members.items()}
    lines = "".join(f"{hashlib.sha256(d).hexdigest()}  {n}\n" for n, d in listed.items())
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        zf.writestr(f"{top}/{bundle.MANIFEST}", lines)
    return buf.getvalue()


def altered(data: bytes) -> bytes:
    """The bundle with its summary.json changed after the manifest was made."""
    src, buf = zipfile.ZipFile(io.BytesIO(data)), io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for info in src.infolist():
            body = src.read(info)
            summary = info.filename.endswith("summary.json")
            zf.writestr(info.filename, body.replace(b"18.0", b"99.0") if summary else body)
    return buf.getvalue()


@pytest.mark.parametrize("make, why", [
    (lambda good: None, "the worker sent no bundle"),
    (lambda good: "a text", "the worker sent no bundle"),
    (lambda good: {"bundle": good}, "the worker sent no bundle"),
    (lambda good: b"not a zip at all", "fails verification (1 problem(s)): cannot open bundle"),
    (lambda good: altered(good), "summary.json: SHA-256 mismatch (altered)"),
    (lambda good: zip_with({f"{RUN}/../../escape.txt": b"x", f"{RUN}/summary.json": b"{}"}),
     "unsafe member name"),  # zip slip
    (lambda good: zip_with({f"{RUN}/summary.json": b"{}"}, manifest={}), "summary.json: not listed in the manifest"),
    (lambda good: zip_with({f"{RUN}/notes.txt": b"hello"}), "holds no run (spec.yaml and summary.json)"),
    (lambda good: zip_with({f"{RUN}/spec.yaml": b"name: x\n", f"{RUN}/summary.json": b"{}",
                            f"{RUN}/partial.jsonl": b"{}\n"}), "has partial.jsonl, which the server keeps"),
])
def test_a_hostile_bundle_is_refused_in_one_line_and_nothing_is_stored(tmp_path: Path, make: Any, why: str) -> None:
    run_dir = a_run_dir(tmp_path)
    with pytest.raises(bundle.BundleError) as err:
        import_bundle(make(bundle_of(tmp_path)), run_dir)
    assert why in str(err.value) and "\n" not in str(err.value)
    assert [p.name for p in run_dir.iterdir()] == ["partial.jsonl"]
    assert not (tmp_path / "results" / "escape.txt").exists() and not (tmp_path / "escape.txt").exists()


def test_an_oversized_bundle_is_refused_before_it_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import fastlab.service.cluster
    good = bundle_of(tmp_path)
    monkeypatch.setattr(fastlab.service.cluster, "MAX_BUNDLE_BYTES", len(good) - 1)
    run_dir = a_run_dir(tmp_path)
    with pytest.raises(bundle.BundleError, match=f"the worker's bundle has {len(good):,} bytes, more than"):
        import_bundle(good, run_dir)
    assert [p.name for p in run_dir.iterdir()] == ["partial.jsonl"]
    assert worker.MAX_BUNDLE_BYTES >= 256 * 1024**2  # the worker's own bound is the same constant


@pytest.mark.parametrize("address, why", [
    ("not an address", "cannot reach the Dask scheduler: missing port number"),
    ("tcp://[::1", "cannot reach the Dask scheduler"),
])
def test_a_bad_cluster_address_stops_the_server_with_one_line(tmp_path: Path, address: str, why: str) -> None:
    import subprocess
    import sys

    from tests.conftest import REPO
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "FASTLAB_RESULTS": str(tmp_path / "results")}
    proc = subprocess.run([sys.executable, "-m", "webapp", "--cluster", address, "--port", "1"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and f"error: --cluster {address}: {why}" in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("python -m webapp: error: --cluster")
    assert not (tmp_path / "results").exists()  # nothing created
