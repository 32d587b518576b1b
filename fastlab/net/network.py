"""Network build: a TopologyPlan becomes Mininet hosts, namespaced Linux routers and switches.

Every object that lives in the root namespace (switches, their ports) carries the run prefix
in its name, so leftovers are identifiable; hosts, routers and link nodes live in their own
network namespaces. A shaped link a==b becomes a -- x -- b, where x is a link node (its own
namespace with two interfaces, `<x>-a` toward a and `<x>-b` toward b) in which the shaping
executor puts the emulator or a bridge. Switches of an OpenFlow core (`NodePlan.openflow`) are
always Open vSwitch bridges in secure fail mode speaking OpenFlow 1.3: they forward nothing until
a controller or static flows program them; their ports are recorded by what they lead to (a
shaped link's id or a neighbour node's name) for the rule planner.

Offloads: with `offloads=True` (the fast path: every shaped link is emulated by linkemu, which
takes TSO/GSO super-frames whole and decides per MTU segment) checksum, scatter-gather and
segmentation offloads are on along every interface, so a 64 KB super-frame crosses each hop in
one piece; GRO/LRO stay off (GRO on a veth switches it to NAPI mode and its own batching), except
on the interfaces that receive what an emulator sends (below). With `offloads=False` they are all
off: tc/netem queues and the OVS userspace datapath must see MTU frames (netem would drop or delay a
super-frame as one packet; OVS userspace stalls TCP).

Receive threads behind the emulators (fast path only): a veth's send runs the receiving side's whole
stack (the next bridge or router, and a host's TCP) inside the sender's system call, so every frame
linkemu released also cost linkemu that downstream work (measured at 1 Gb/s x 80 ms: 37 % of its
CPU time under `sendmmsg`), and its next departure waited for it. A real wire hands the frame to the
receiver's NIC and its interrupt, and so does fastlab: the interfaces that receive from an emulator
(`LinkEnds.a_dev`, `b_dev`) run NAPI in a kernel thread of their own (`threaded`), so linkemu's send
only queues the frame. veth enables NAPI when GRO is on, and for frames with TSO (a packet socket's)
only when the receiver also has `rx-gro-list` or `rx-udp-gro-forwarding` (`veth_skb_is_eligible_for_gro`
in drivers/net/veth.c); fastlab turns on the latter, which only affects UDP, and no run carries UDP.
Measured (bench/emulator.py's case, three runs each, medians): emulator 0.249 -> 0.184 cores per
Gb/s, lateness p99 153 -> 118 us, machine CPU unchanged (the work moved to the receive threads).
Each such thread (a kernel thread `napi/<dev>-<id>`) is found as it is created and kept in
`receive_threads`, so the shaper can run an emulator on the same CPU as the threads it wakes
(fastlab.net.placement).
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastlab.define.schema import MTU_BYTES
from fastlab.define.topology import TopologyPlan
from fastlab.net import placement
from fastlab.net.runstate import RunState, TrackedPid, process_start_time
from fastlab.plan.link_commands import Wire

OFFLOADS = ("tx", "rx", "tso", "gso", "gro", "lro", "sg")
FAST_PATH_ON = ("tx", "rx", "sg", "tso", "gso")  # the rest of OFFLOADS stays off
RECEIVE_THREAD_FEATURES = ("gro", "on", "rx-udp-gro-forwarding", "on")  # veth NAPI for TSO frames
# OVS's userspace datapath receives each port through an AF_PACKET socket sized by the root
# namespace's rmem_default; at the 208 KiB default, bursts overflow it and packets vanish
# without a counter (measured: FAST retransmits on an otherwise loss-free sc2002 path).
OVS_USER_RMEM_DEFAULT = 4 * 1024 * 1024
SHELL_EXIT_TIMEOUT_S = 5.0  # a node shell signalled to exit is gone in milliseconds
RMEM_DEFAULT = Path("/proc/sys/net/core/rmem_default")


class NetworkError(RuntimeError):
    """The network could not be built as planned."""



def _bridge_class(linux_bridge: type) -> type:
    """Mininet's LinuxBridge without its class set-up, which warns on every run that "Linux bridge may not
    work with net.bridge.bridge-nf-call-iptables = 1". It does work: bridged frames then pass the host
    namespace's br_netfilter hooks, which cost 3-8 % more CPU per Gb/s here with no netfilter table or
    conntrack in use (bench/brnf.py, bench/data/brnf-2026-11-27.txt, within a repeat's spread). The
    host's setting and conntrack count are recorded in each run's environment.json
    (fastlab.experiment.machine.ROOT_SYSCTLS) instead. What the set-up
    also did, checking that brctl is there, is done here."""
    if not shutil.which("brctl"):
        raise NetworkError("Linux bridges need brctl (Debian: bridge-utils), which is not installed")
    return type("Bridge", (linux_bridge,), {"isSetup": True})

@dataclass
class LinkEnds:
    """The devices around one shaped link, by namespace node name."""

    link_id: str
    node: str  # the link node
    dev_a: str  # link node's interface toward a
    dev_b: str
    a: str
    a_dev: str  # a's interface toward the link node
    b: str
    b_dev: str


@dataclass
class Network:
    plan: TopologyPlan
    prefix: str
    wires: tuple[Wire, ...]  # each link's interface names, in plan.links order (the run plan's: for_run)
    switch_kind: str
    state: RunState
    openflow_kind: str = "ovs-user"  # OVS datapath of the OpenFlow switches
    offloads: bool = False  # the fast path: segmentation and checksum offloads on (see module doc)
    mtu: int = MTU_BYTES  # of every interface (spec `mtu`: 9000 = jumbo frames)
    mn: Any = None
    nodes: dict[str, Any] = field(default_factory=dict)
    link_ends: dict[str, LinkEnds] = field(default_factory=dict)
    applied: list[list[str]] = field(default_factory=list)
    switch_ports: dict[str, dict[str, str]] = field(default_factory=dict)  # switch -> {leads to: port}
    # link -> the NAPI kernel threads of the interfaces its emulator sends into (fast path only)
    receive_threads: dict[str, list[TrackedPid]] = field(default_factory=dict)

    def node(self, name: str) -> Any:
        return self.nodes[name]

    def run(self, node_name: str, argv: list[str], timeout: float = 20, record: bool = True,
            ok_codes: tuple[int, ...] = (0,)) -> str:
        """Run a command in a node's namespace; raise with its stderr when it exits other than `ok_codes`."""
        node = self.nodes[node_name]
        proc = node.popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise NetworkError(f"{node_name}: {' '.join(argv)} timed out after {timeout}s") from None
        if proc.returncode not in ok_codes:
            raise NetworkError(f"{node_name}: {' '.join(argv)} failed: {err.strip() or out.strip()}")
        if record:
            self.applied.append([node_name, *argv])
        return out

    # --- build -----------------------------------------------------------------------------

    def build(self, sockbuf_bytes: int) -> None:
        from mininet.net import Mininet
        from mininet.node import Host

        self.mn = Mininet(topo=None, build=False, controller=None, waitConnected=False)
        kinds = {self.openflow_kind if node.openflow else self.switch_kind
                 for node in self.plan.nodes.values() if node.role == "switch"}
        if "ovs-user" in kinds and int(RMEM_DEFAULT.read_text()) < OVS_USER_RMEM_DEFAULT:
            RMEM_DEFAULT.write_text(str(OVS_USER_RMEM_DEFAULT))
            self.applied.append(["root", "sysctl", f"net.core.rmem_default={OVS_USER_RMEM_DEFAULT}"])
        for name, node in self.plan.nodes.items():
            if node.role == "switch":
                self.nodes[name] = self._add_switch(name, len(self.nodes) + 1, node.openflow)
                self.switch_ports[name] = {}
            else:
                self.nodes[name] = self.mn.addHost(name, cls=Host, ip=None)
                self.state.add_pid(self.nodes[name].pid, f"shell {name}")
        def note_ports(link: Any, dev_a: str, dev_b: str) -> None:
            for here, dev, there in ((link.a, dev_a, link.b), (link.b, dev_b, link.a)):
                if here in self.switch_ports:
                    self.switch_ports[here][link.shaped or there] = dev

        for link, wire in zip(self.plan.links, self.wires, strict=True):
            if wire.devices is not None and link.shaped:  # a shaped link: a -- link node x -- b
                d = wire.devices
                self.nodes[d.node] = self.mn.addHost(d.node, cls=Host, ip=None)
                self.state.add_pid(self.nodes[d.node].pid, f"shell link node {link.shaped}")
                ends = LinkEnds(link.shaped, d.node, d.dev_a, d.dev_b, d.a, d.a_dev, d.b, d.b_dev)
                self._veth(link.a, ends.a_dev, d.node, ends.dev_a)
                self._veth(d.node, ends.dev_b, link.b, ends.b_dev)
                self.link_ends[link.shaped] = ends
            else:
                self._veth(link.a, wire.a_dev, link.b, wire.b_dev)
            note_ports(link, wire.a_dev, wire.b_dev)
            self._address(link.a, wire.a_dev, link.a_ip)
            self._address(link.b, wire.b_dev, link.b_ip)
        self.mn.build()
        for switch in self.switches():
            switch.start([])
        for name, node in self.plan.nodes.items():
            if node.role != "switch":
                self._configure_namespace(name, router=node.role == "router", sockbuf_bytes=sockbuf_bytes)
            for route in node.routes:
                self.run(name, ["ip", "route", "replace", route.dst, "via", route.via])
        for ends in self.link_ends.values():
            self._configure_namespace(ends.node, router=False, sockbuf_bytes=sockbuf_bytes)
        for name, node in self.nodes.items():
            for intf in node.intfList():
                if intf.name != "lo":
                    if self.mtu != MTU_BYTES:
                        self.run(name, ["ip", "link", "set", "dev", intf.name, "mtu", str(self.mtu)])
                    self._set_offloads(node, intf.name)
        if self.offloads:
            for link_id, ends in self.link_ends.items():
                self.receive_threads[link_id] = [*self._receive_thread(ends.a, ends.a_dev),
                                                 *self._receive_thread(ends.b, ends.b_dev)]

    def _add_switch(self, name: str, index: int, openflow: bool) -> Any:
        from mininet.node import OVSSwitch
        from mininet.nodelib import LinuxBridge

        root_name = f"{self.prefix}{name}"
        kind = self.openflow_kind if openflow else self.switch_kind
        self.state.add_bridge(root_name, kind)
        if kind in ("ovs-kernel", "ovs-user"):
            datapath = "kernel" if kind == "ovs-kernel" else "user"
            return self.mn.addSwitch(root_name, cls=OVSSwitch, datapath=datapath, dpid=f"{index:016x}", batch=False,
                                     failMode="secure" if openflow else "standalone",
                                     protocols="OpenFlow13" if openflow else None)
        if kind == "bridge":
            return self.mn.addSwitch(root_name, cls=_bridge_class(LinuxBridge))
        raise NetworkError(f"switch implementation {kind!r} is unavailable")

    def dpid(self, switch: str) -> int:
        return int(self.nodes[switch].dpid, 16)

    def ofports(self, switch: str) -> dict[str, int]:
        """OpenFlow port numbers of an OVS switch, by what each port leads to."""
        numbers = {}
        for toward, dev in self.switch_ports[switch].items():
            out = _ovs_vsctl(["get", "Interface", dev, "ofport"])
            if not out.isdigit() or int(out) <= 0:
                raise NetworkError(f"switch {switch}: port {dev} has no OpenFlow port number ({out!r})")
            numbers[toward] = int(out)
        return numbers

    def switches(self) -> list[Any]:
        return [self.nodes[n] for n, node in self.plan.nodes.items() if node.role == "switch"]

    def _veth(self, a: str, dev_a: str, b: str, dev_b: str) -> None:
        for node, dev in ((a, dev_a), (b, dev_b)):
            if self.plan.nodes.get(node) and self.plan.nodes[node].role == "switch":
                self.state.add_intf(dev)
        if len(dev_a) > 15 or len(dev_b) > 15:
            raise NetworkError(f"interface name too long: {dev_a} / {dev_b}")
        self.mn.addLink(self.nodes[a], self.nodes[b], intfName1=dev_a, intfName2=dev_b)

    def _address(self, node: str, dev: str, cidr: str | None) -> None:
        if cidr:
            self.nodes[node].intf(dev).setIP(cidr)

    def _configure_namespace(self, name: str, router: bool, sockbuf_bytes: int) -> None:
        sysctls = {"net.ipv6.conf.all.disable_ipv6": "1", "net.ipv6.conf.default.disable_ipv6": "1",
                   "net.ipv4.ip_forward": "1" if router else "0",
                   "net.ipv4.tcp_no_metrics_save": "1",
                   "net.ipv4.tcp_rmem": f"4096 131072 {sockbuf_bytes}",
                   "net.ipv4.tcp_wmem": f"4096 16384 {sockbuf_bytes}"}
        self.run(name, ["sysctl", "-q", "-w", *(f"{k}={v}" for k, v in sysctls.items())])

    def _set_offloads(self, node: Any, dev: str) -> None:
        argv = ["ethtool", "-K", dev]
        for feature in OFFLOADS:
            argv += [feature, "on" if self.offloads and feature in FAST_PATH_ON else "off"]
        proc = node.popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        _out, err = proc.communicate(timeout=10)
        # ethtool exits non-zero when one feature is fixed on a device (e.g. lro on veth) but
        # still changes the others; what matters is checksum, segmentation and GRO as asked.
        check = node.popen(["ethtool", "-k", dev], stdout=subprocess.PIPE, text=True)
        state, _ = check.communicate(timeout=10)
        want = "on" if self.offloads else "off"
        for key in ("tx-checksumming", "tcp-segmentation-offload", "generic-segmentation-offload"):
            if f"{key}: {want}" not in state:
                raise NetworkError(f"cannot turn {want} {key} on {dev}: {err.strip()}")
        if "generic-receive-offload: on" in state:
            raise NetworkError(f"cannot turn off generic-receive-offload on {dev}: {err.strip()}")
        self.applied.append([node.name, *argv])

    def _receive_thread(self, node_name: str, dev: str) -> list[TrackedPid]:
        """Give `dev` (it receives what an emulator sends) NAPI in a kernel thread (see module doc);
        that thread, found as the one `napi/<dev>` thread the write created, or [] if that is not
        one thread (another run creating its own at the same moment: then nothing is colocated)."""
        self.run(node_name, ["ethtool", "-K", dev, *RECEIVE_THREAD_FEATURES])
        before = set(placement.napi_threads())
        # Mininet's mnexec gives each namespaced node a sysfs of its own network namespace.
        knob = f"/sys/class/net/{dev}/threaded"
        out = self.run(node_name, ["sh", "-c", f"echo 1 > {knob} && cat {knob}"], record=False)
        if out.strip() != "1":
            raise NetworkError(f"{node_name}: {knob} reads {out.strip()!r} after writing 1")
        self.applied.append([node_name, "sysfs", f"{knob}=1"])
        name = f"napi/{dev}"[:placement.KTHREAD_NAME_CHARS]
        new = [pid for pid, comm in placement.napi_threads().items() if pid not in before and comm.startswith(name)]
        start = process_start_time(new[0]) if len(new) == 1 else None
        return [TrackedPid(new[0], start, f"napi {dev}")] if start is not None else []

    def openflow_switches(self) -> list[str]:
        return [name for name, node in self.plan.nodes.items() if node.role == "switch" and node.openflow]

    # --- teardown ---------------------------------------------------------------------------

    def stop(self) -> None:
        if self.mn is None:
            return
        switches = self.switches()
        for switch in switches:
            switch.stop(deleteIntfs=True)
            switch.terminate()  # Mininet's Switch.stop leaves the node's shell (bash -is mininet:<name>)
        for node in self.nodes.values():
            if node not in switches:
                node.stop(deleteIntfs=True)
        for node in self.nodes.values():
            _reap(node)
        self.mn = None


def _reap(node: Any) -> None:
    """Wait for a stopped node's shell (terminate() only signals it): a long-lived process (the web server)
    otherwise keeps every run's shells as children (two a run, 170 MB after 30 runs, issue 37)."""
    shell = getattr(node, "shell", None)
    if shell is None:
        return
    try:
        shell.wait(timeout=SHELL_EXIT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        shell.kill()  # our own child, by its Popen: never a process found by name
        shell.wait(timeout=SHELL_EXIT_TIMEOUT_S)


def _ovs_vsctl(argv: list[str]) -> str:
    proc = subprocess.run(["ovs-vsctl", "--timeout=10", *argv], capture_output=True, text=True, timeout=15,
                          check=False)
    if proc.returncode != 0:
        raise NetworkError(f"ovs-vsctl {' '.join(argv)} failed: {proc.stderr.strip()}")
    return proc.stdout.strip()
