"""`paths`: an OpenFlow 1.3 controller app (os-ken) that pins TCP flows to paths of a switched core.

The engine starts it as `python -m controllers.fastlab_paths --port N` in the root namespace
(OVS connects to 127.0.0.1:N) and talks to it in JSON lines:

    stdin  {"cmd": "config", "design": ..., "switches": {"s5": {"dpid": 5, "ports": {...}}},
            "flows": [{"id", "src_ip", "dst_ip", "port", "path"}], "stats_hz": 10}
           {"cmd": "route", "seq": 1, "flows": ["f1"], "path": "abilene"}
           {"cmd": "stop"}
    stdout {"event": "installed", "t": ..., "rules": N}       every switch programmed (barrier)
           {"event": "routed", "seq": 1, "t": ..., "flows": [...], "path": ...}
           {"event": "port_stats", "switch": "s5", "t": ..., "ports": [{port, rx_packets, ...}]}
           {"event": "error", "message": ...}

Rules come from fastlab.run.openflow (the one rule planner; static runs use it through ovs-ofctl).
Times are CLOCK_MONOTONIC seconds, the engine's clock. Installing replaces every flow of the
switch; a reroute rewrites the flow's rules in place (MODIFY_STRICT), so no packet of the flow
meets a missing rule. Port statistics are polled every 1/stats_hz s from every switch.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from typing import Any

from fastlab.run.openflow import FlowPath, Rule, flow_rules, plan_rules

try:  # os-ken is only needed when the app runs, not to import its helpers in tests
    from os_ken.base import app_manager
    from os_ken.controller import ofp_event
    from os_ken.controller.handler import CONFIG_DISPATCHER, MAIN_DISPATCHER, set_ev_cls
    from os_ken.lib import hub
    from os_ken.ofproto import ofproto_v1_3
except ImportError:  # pragma: no cover - the engine checks for os-ken before starting the app
    app_manager = None

PORT_FIELDS = ("rx_packets", "tx_packets", "rx_bytes", "tx_bytes", "rx_dropped", "tx_dropped")


def emit(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


if app_manager is not None:
    class PathController(app_manager.OSKenApp):
        OFP_VERSIONS = [ofproto_v1_3.OFP_VERSION]

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.datapaths: dict[int, Any] = {}
            self.config: dict[str, Any] | None = None
            self.names: dict[int, str] = {}  # dpid -> switch name
            self.flows: dict[str, FlowPath] = {}
            self.pending: dict[tuple[int, int], dict[str, Any]] = {}  # (dpid, xid) -> confirmation
            self.installed = False
            hub.spawn(self._read_commands)

        # --- engine commands ---------------------------------------------------------------

        def _read_commands(self) -> None:
            from eventlet.hubs import trampoline

            fd = sys.stdin.fileno()
            os.set_blocking(fd, False)
            buffer = b""
            while True:
                trampoline(fd, read=True)
                chunk = os.read(fd, 65536)
                if not chunk:
                    stop()
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    try:
                        self._command(json.loads(line))
                    except Exception as exc:  # noqa: BLE001 - reported to the engine, which fails the run
                        emit({"event": "error", "message": f"{exc.__class__.__name__}: {exc}"})

        def _command(self, msg: dict[str, Any]) -> None:
            if msg["cmd"] == "config":
                self.config = msg
                self.names = {int(s["dpid"]): name for name, s in msg["switches"].items()}
                self.flows = {f["id"]: FlowPath(**f) for f in msg["flows"]}
                self._install_when_connected()
            elif msg["cmd"] == "route":
                self._route(msg)
            elif msg["cmd"] == "stop":
                stop()
            else:
                raise ValueError(f"unknown command {msg['cmd']!r}")

        def _ofports(self) -> dict[str, dict[str, int]]:
            assert self.config is not None
            return {name: s["ports"] for name, s in self.config["switches"].items()}

        def _install_when_connected(self) -> None:
            if self.config is None or self.installed or not set(self.names) <= set(self.datapaths):
                return
            self.installed = True
            rules = plan_rules(self.config["design"], self._ofports(), list(self.flows.values()))
            for dpid, dp in self.datapaths.items():
                if dpid in self.names:
                    parser, ofp = dp.ofproto_parser, dp.ofproto
                    dp.send_msg(parser.OFPFlowMod(dp, command=ofp.OFPFC_DELETE, table_id=ofp.OFPTT_ALL,
                                                  out_port=ofp.OFPP_ANY, out_group=ofp.OFPG_ANY))
            self._send(rules, add=True, confirm={"event": "installed", "rules": len(rules)})
            hub.spawn(self._poll_stats, float(self.config["stats_hz"]))

        def _route(self, msg: dict[str, Any]) -> None:
            assert self.config is not None and self.installed, "route before the rules are installed"
            rules: list[Rule] = []
            for flow_id in msg["flows"]:
                flow = self.flows[flow_id]
                self.flows[flow_id] = FlowPath(flow.id, flow.src_ip, flow.dst_ip, flow.port, msg["path"])
                rules += flow_rules(self.config["design"], self._ofports(), self.flows[flow_id])
            self._send(rules, add=False, confirm={"event": "routed", "seq": msg["seq"], "flows": msg["flows"],
                                                  "path": msg["path"]})

        def _send(self, rules: list[Rule], add: bool, confirm: dict[str, Any]) -> None:
            """Send FlowMods, then a barrier per switch; `confirm` goes out when all barriers return."""
            token = {"message": confirm, "waiting": set()}
            for dpid, name in self.names.items():
                dp = self.datapaths[dpid]
                parser, ofp = dp.ofproto_parser, dp.ofproto
                for rule in (r for r in rules if r.switch == name):
                    actions = [parser.OFPActionOutput(rule.out_port)]
                    inst = [parser.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, actions)]
                    dp.send_msg(parser.OFPFlowMod(
                        dp, priority=rule.priority, match=parser.OFPMatch(**rule.match()), instructions=inst,
                        command=ofp.OFPFC_ADD if add else ofp.OFPFC_MODIFY_STRICT))
                barrier = parser.OFPBarrierRequest(dp)
                dp.set_xid(barrier)
                dp.send_msg(barrier)
                token["waiting"].add((dpid, barrier.xid))
                self.pending[(dpid, barrier.xid)] = token

        @set_ev_cls(ofp_event.EventOFPBarrierReply, MAIN_DISPATCHER)
        def _barrier_reply(self, ev: Any) -> None:
            token = self.pending.pop((ev.msg.datapath.id, ev.msg.xid), None)
            if token is None:
                return
            token["waiting"].discard((ev.msg.datapath.id, ev.msg.xid))
            if not token["waiting"]:
                emit(token["message"] | {"t": time.monotonic()})

        @set_ev_cls(ofp_event.EventOFPErrorMsg, MAIN_DISPATCHER)
        def _error(self, ev: Any) -> None:
            emit({"event": "error", "message": f"switch {self.names.get(ev.msg.datapath.id, ev.msg.datapath.id)}: "
                                                f"OpenFlow error type {ev.msg.type} code {ev.msg.code}"})

        # --- switches and statistics -------------------------------------------------------

        @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
        def _switch_features(self, ev: Any) -> None:
            self.datapaths[ev.msg.datapath.id] = ev.msg.datapath
            hub.spawn(self._install_when_connected)

        def _poll_stats(self, hz: float) -> None:
            period = 1.0 / hz
            next_t = time.monotonic()
            while True:
                for dpid in self.names:
                    dp = self.datapaths[dpid]
                    dp.send_msg(dp.ofproto_parser.OFPPortStatsRequest(dp, 0, dp.ofproto.OFPP_ANY))
                next_t += period
                hub.sleep(max(0.0, next_t - time.monotonic()))

        @set_ev_cls(ofp_event.EventOFPPortStatsReply, MAIN_DISPATCHER)
        def _port_stats(self, ev: Any) -> None:
            ports = [{"port": s.port_no, **{f: getattr(s, f) for f in PORT_FIELDS}}
                     for s in ev.msg.body if s.port_no < ofproto_v1_3.OFPP_MAX]
            emit({"event": "port_stats", "switch": self.names.get(ev.msg.datapath.id, str(ev.msg.datapath.id)),
                  "t": time.monotonic(), "ports": ports})


def stop(*_args: Any) -> None:
    """Exit 0 at once: the engine asked (or closed our stdin); the switches go with the run."""
    sys.stdout.flush()
    os._exit(0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True, help="OpenFlow TCP port on 127.0.0.1")
    args = parser.parse_args()
    hub.patch(thread=False)
    signal.signal(signal.SIGTERM, stop)
    from os_ken import cfg

    cfg.CONF(args=["--ofp-listen-host", "127.0.0.1", "--ofp-tcp-listen-port", str(args.port)], project="os_ken")
    app_manager.AppManager.run_apps(["controllers.fastlab_paths", "os_ken.controller.ofp_handler"])


if __name__ == "__main__":
    main()
