"""OpenFlow control of a run: the controller app's process, static flows, reroutes, port statistics.

When the topology has an OpenFlow core (`plan.metadata["openflow"]`, see fastlab.run.openflow) its
switches are OVS bridges in secure fail mode. With a `controller` in the spec, `OpenFlowControl`
starts the app from controllers/ as a tracked process in the root namespace, points the bridges
at it over loopback, hands it the design, the port numbers and each flow's path, and waits until
every switch is programmed. Scheduled reroutes are sent at their time; the app confirms each
after a barrier, and the confirmation becomes a `reroute` event in cc_events.csv and the live
stream. Port statistics the app polls become `link` samples (link `<switch>:<leads to>`,
direction `port`) in links.csv. Without a controller the same rules go in once with ovs-ofctl.
"""

from __future__ import annotations

import socket
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastlab.base import paths
from fastlab.base.supervised import Supervised
from fastlab.define.schema import ControllerSpec, Reroute
from fastlab.net.network import Network
from fastlab.plan.flows import Flow
from fastlab.run.openflow import FlowPath, plan_rules

APPS = {"paths": "controllers.fastlab_paths"}  # spec `controller.app` -> its module (the controllers package)
READY_TIMEOUT_S = 30.0
ROUTE_TIMEOUT_S = 5.0
STOP_TIMEOUT_S = 5.0


class ControlError(RuntimeError):
    """The switches could not be programmed, or the controller failed during the run."""


def free_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_samples(switch: str, names: dict[int, str], msg: dict[str, Any]) -> list[dict[str, Any]]:
    """A port_stats line -> one link sample per named port (ports the design does not name are skipped)."""
    return [{"t": float(msg["t"]), "link": f"{switch}:{names[p['port']]}", "direction": "port",
             "rx_pkts": p["rx_packets"], "tx_pkts": p["tx_packets"], "rx_bytes": p["rx_bytes"],
             "tx_bytes": p["tx_bytes"], "port_drops": p["rx_dropped"] + p["tx_dropped"]}
            for p in msg["ports"] if p["port"] in names]


@dataclass
class OpenFlowControl:
    net: Network
    design: dict[str, Any]
    flows: list[Flow]
    controller: ControllerSpec | None
    emit: Callable[[str, dict[str, Any]], None]
    log_path: Path
    errors: list[str] = field(default_factory=list)
    applied: dict[str, Any] = field(default_factory=dict)  # for environment.json
    _app: Supervised | None = None
    _ofports: dict[str, dict[str, int]] = field(default_factory=dict)
    _replies: dict[str, threading.Event] = field(default_factory=dict)
    _pending: dict[str, tuple[Reroute, float, float]] = field(default_factory=dict)  # seq -> reroute, t0, sent
    _timers: list[threading.Timer] = field(default_factory=list)
    _seq: int = 0

    def _flow_paths(self) -> list[FlowPath]:
        return [FlowPath(f.id, f.src_ip, f.dst_ip, f.port, f.path or self.design["default_path"]) for f in self.flows]

    def start(self) -> None:
        self._ofports = {s: self.net.ofports(s) for s in self.net.openflow_switches()}
        self.applied = {"switches": {s: {"bridge": self.net.node(s).name, "dpid": self.net.dpid(s),
                                         "ports": ports} for s, ports in self._ofports.items()},
                        "default_path": self.design["default_path"],
                        "flow_paths": {f.id: f.path for f in self._flow_paths()}, "reroutes": []}
        if self.controller is None:
            self._static_rules()
        else:
            self._start_app(self.controller)

    def _static_rules(self) -> None:
        rules = plan_rules(self.design, self._ofports, self._flow_paths())
        for switch in self._ofports:
            text = "".join(r.ofctl() + "\n" for r in rules if r.switch == switch)
            argv = ["ovs-ofctl", "-O", "OpenFlow13", "add-flows", self.net.node(switch).name, "-"]
            proc = subprocess.run(argv, input=text, capture_output=True, text=True, timeout=20, check=False)
            if proc.returncode != 0:
                raise ControlError(f"{' '.join(argv)} failed: {proc.stderr.strip()}")
        self.applied |= {"mode": "static (ovs-ofctl)", "rules": len(rules)}

    def _start_app(self, controller: ControllerSpec) -> None:
        port = free_loopback_port()
        installed = self._replies.setdefault("installed", threading.Event())
        with self.log_path.open("w") as log:  # the app's stderr: its own log, kept in the run folder
            self._app = Supervised.start(f"controller {controller.app}",
                                         [paths.python(), "-m", APPS[controller.app], "--port", str(port)],
                                         state=self.net.state, on_message=self._on_message, stdin=True, stderr=log,
                                         cwd=str(paths.package_parent()),
                                         ask_stop=lambda app: app.send({"cmd": "stop"}))
        self.applied |= {"mode": f"controller {controller.app} (os-ken, OpenFlow 1.3)", "port": port,
                         "stats_hz": controller.stats_hz}
        for switch in self._ofports:
            subprocess.run(["ovs-vsctl", "--timeout=10", "set-controller", self.net.node(switch).name,
                            f"tcp:127.0.0.1:{port}"], check=True, capture_output=True, timeout=15)
        self._send({"cmd": "config", "design": self.design, "stats_hz": controller.stats_hz,
                    "switches": {s: {"dpid": self.net.dpid(s), "ports": p} for s, p in self._ofports.items()},
                    "flows": [vars(f) for f in self._flow_paths()]})
        if not installed.wait(READY_TIMEOUT_S) or self.errors:
            raise ControlError(f"controller {controller.app}: switches not programmed within {READY_TIMEOUT_S:g} s"
                               f"{': ' + '; '.join(self.errors) if self.errors else ''} (log: {self.log_path})")

    def _send(self, msg: dict[str, Any]) -> None:
        assert self._app is not None
        self._app.send(msg)

    def _on_message(self, msg: dict[str, Any]) -> None:
        """One line from the app: port counters become link samples; replies complete requests."""
        event = msg.get("event")
        if event == "port_stats":
            names = {n: toward for toward, n in self._ofports.get(msg["switch"], {}).items()}
            for sample in port_samples(msg["switch"], names, msg):
                self.emit("link", sample)
        elif event == "installed":
            self.applied["rules"] = msg["rules"]
            self._replies["installed"].set()
        elif event == "routed":
            self._routed(msg)
        elif event == "error":
            self.errors.append(f"controller: {msg['message']}")

    def schedule(self, reroutes: list[Reroute], t0: float) -> None:
        """Send each reroute at t0 + at_s (the app confirms it; `errors` collects failures)."""
        for reroute in reroutes:
            timer = threading.Timer(max(0.0, t0 + reroute.at_s - time.monotonic()), self._reroute, (reroute, t0))
            timer.daemon = True
            timer.start()
            self._timers.append(timer)

    def _reroute(self, reroute: Reroute, t0: float) -> None:
        self._seq += 1
        seq = str(self._seq)
        done = self._replies.setdefault(seq, threading.Event())
        flows = reroute.flows or [f.id for f in self.flows]
        self._pending[seq] = (reroute, t0, time.monotonic())
        self._send({"cmd": "route", "seq": int(seq), "flows": flows, "path": reroute.path})
        if not done.wait(ROUTE_TIMEOUT_S):
            self.errors.append(f"reroute at {reroute.at_s:g} s to {reroute.path}: no confirmation "
                               f"within {ROUTE_TIMEOUT_S:g} s")

    def _routed(self, msg: dict[str, Any]) -> None:
        reroute, t0, sent = self._pending[str(msg["seq"])]
        for flow in msg["flows"]:
            self.emit("event", {"t": float(msg["t"]), "flow": flow, "event": "reroute", "path": msg["path"],
                                "scheduled_s": reroute.at_s, "command_latency_ms": round((msg["t"] - sent) * 1e3, 2)})
        self.applied["reroutes"].append({"at_s": reroute.at_s, "path": msg["path"], "flows": msg["flows"],
                                         "applied_s": round(float(msg["t"]) - t0, 4)})
        self._replies[str(msg["seq"])].set()

    def stop(self) -> None:
        """Stop the timers and the app; record its exit code (0 when it stopped as asked)."""
        for timer in self._timers:
            timer.cancel()
        if self._app is None:
            return
        code = self._app.stop(STOP_TIMEOUT_S)  # its stop command first, SIGKILL after the grace
        self.applied["exit_code"] = code
        if code != 0:
            self.errors.append(f"controller exited with code {code} (log: {self.log_path})")
