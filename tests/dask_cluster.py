"""A local Dask cluster for the tests of the web queue on a cluster: a scheduler and one worker started as
the README says (`fastlab cluster scheduler|worker`) on 127.0.0.1 with random ports, each the test's own
child process (tracked by PID, stopped in teardown)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.conftest import REPO
from tests.integration.test_sweep_bundle import stop
from tests.webapp.test_restart import wait_for

__all__ = ["LocalCluster", "local_cluster", "wait_for"]


# as the installed `fastlab` wrapper runs the CLI, with this checkout importable and no PYTHONPATH left over
CLI = [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(REPO)!r}); from fastlab.cli import main; "
       "sys.exit(main())", "cluster"]


class LocalCluster:
    """A scheduler and one worker on loopback, each this test's own child (tracked by PID)."""

    def __init__(self, tmp: Path) -> None:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        info, self.log = tmp / "scheduler.json", (tmp / "dask.log").open("w")
        self.common: dict[str, Any] = {"cwd": tmp, "env": env, "stdout": subprocess.DEVNULL, "stderr": self.log}
        self.tmp = tmp
        self.scheduler = subprocess.Popen([*CLI, "scheduler", "--host", "127.0.0.1", "--port", "0",
                                           "--scheduler-file", str(info)], **self.common)
        self.worker: subprocess.Popen[Any] | None = None
        self.address = json.loads(wait_for(lambda: info.is_file() and info.read_text(), 60, "the scheduler"))["address"]
        self.start_worker()

    def start_worker(self) -> None:
        self.worker = subprocess.Popen([*CLI, "worker", self.address, "--host", "127.0.0.1",
                                        "--local-directory", str(self.tmp / "worker")], **self.common)

    def workers(self) -> dict[str, Any]:
        from distributed import Client
        with Client(self.address, timeout="15s") as client:
            return client.scheduler_info(n_workers=-1)["workers"]

    def worker_pids(self) -> dict[str, int]:
        """Each worker process's PID as it says itself (a nanny's child: not the PID this test started)."""
        from distributed import Client
        with Client(self.address, timeout="15s") as client:
            return client.run(os.getpid)

    def close(self) -> None:
        for proc in (self.worker, self.scheduler):
            stop(proc)
        self.log.close()


def local_cluster() -> Iterator[LocalCluster]:
    """A running LocalCluster with its worker registered (for a fixture)."""
    with tempfile.TemporaryDirectory(prefix="fastlab-cluster-") as tmp:
        local = LocalCluster(Path(tmp))
        try:
            wait_for(lambda: local.workers(), 60, "a worker")
            yield local
        finally:
            local.close()


