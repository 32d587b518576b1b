"""`make run` on a set-up machine with no network at all: an offline classroom server starts.

The README's command runs in a network namespace of its own that holds only a loopback device, so no
package registry (no address, no route, no DNS) is reachable; its set-up step must find everything in
place and the web app must serve http://127.0.0.1:8080 inside that namespace."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, machine_leftovers

pytestmark = pytest.mark.usefixtures("as_root")

PROBE = """
import socket, sys, urllib.request
try:  # the namespace really is offline: no name resolves, no route leaves it
    socket.create_connection(("deb.debian.org", 80), timeout=3)
    print("online"); sys.exit(0)
except OSError:
    pass
try:
    socket.create_connection(("151.101.0.223", 443), timeout=3)  # an address of pypi.org's CDN
    print("online"); sys.exit(0)
except OSError:
    pass
with urllib.request.urlopen("http://127.0.0.1:8080/", timeout=5) as resp:
    body = resp.read().decode()
print(resp.status, "fastlab" in body.lower())
"""


@pytest.mark.timeout(300)
def test_make_run_serves_with_no_network(tmp_path: Path) -> None:
    before = machine_leftovers()
    ovs_before = _ovs_namespaces()
    env = {**os.environ, "FASTLAB_RESULTS": str(tmp_path / "results")}
    log = (tmp_path / "make-run.log").open("w")
    # `exec`: the namespace's first process becomes make, so its pid names the namespace
    server = subprocess.Popen(["unshare", "--net", "sh", "-c", "ip link set lo up && exec make -s run"],
                              cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        ours = os.readlink("/proc/self/ns/net")
        while time.monotonic() < deadline and server.poll() is None:  # until unshare has made its namespace
            try:
                if os.readlink(f"/proc/{server.pid}/ns/net") != ours:
                    break
            except OSError:
                pass
            time.sleep(0.05)
        answer = ""
        while time.monotonic() < deadline and server.poll() is None:
            probe = subprocess.run(["nsenter", "-t", str(server.pid), "-n", sys.executable, "-c", PROBE],
                                   capture_output=True, text=True, timeout=60, check=False)
            answer = probe.stdout.strip()
            if probe.returncode == 0:
                break
            time.sleep(1)
        assert server.poll() is None, (tmp_path / "make-run.log").read_text()[-3000:]
        assert answer == "200 True", (answer, (tmp_path / "make-run.log").read_text()[-3000:])
    finally:
        os.killpg(server.pid, signal.SIGTERM)  # this test's own process group
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=10)
        log.close()
    assert machine_leftovers() == before
    assert _ovs_namespaces() == ovs_before  # set-up started no daemon inside the test's namespace


def _ovs_namespaces() -> list[str]:
    """The network namespaces of the running ovs-vswitchd processes (the machine's own, normally)."""
    out = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "comm").read_text().strip() == "ovs-vswitchd":
                out.append(os.readlink(entry / "ns" / "net"))
        except OSError:
            continue
    return sorted(out)
