"""Capability probe: what this kernel and host can do, and which backend each job will use.

Probes that need kernel objects run in a throwaway network namespace (`unshare -n`), so they
leave nothing behind. Nothing here assumes the development machine's gaps: a stock Ubuntu
kernel with netem, modules and the OVS kernel datapath is detected as such.
"""

from __future__ import annotations

import platform
import shutil
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path

from fastlab.base import paths
from fastlab.base.paths import cgroup2_root

TRACEFS = (Path("/sys/kernel/tracing"), Path("/sys/kernel/debug/tracing"))
# The kernel AQM qdiscs (spec model -> the options of a probe that must be accepted): tc RED needs its
# limit and avpkt; CoDel and PIE take their defaults.
AQM_QDISCS = {"red": "limit 100000 min 15000 max 45000 avpkt 1500 burst 20 probability 0.1 bandwidth 10mbit",
              "codel": "", "pie": ""}


@dataclass(frozen=True)
class Probe:
    name: str
    present: bool
    detail: str


@dataclass
class Capabilities:
    kernel: str
    probes: dict[str, Probe] = field(default_factory=dict)

    def has(self, name: str) -> bool:
        probe = self.probes.get(name)
        return bool(probe and probe.present)

    def backends(self) -> dict[str, tuple[str, str]]:
        """Job -> (backend, why)."""
        chosen: dict[str, tuple[str, str]] = {}
        if self.has("netem"):
            chosen["delay"] = ("netem", "sch_netem is available; links with loss still use the emulator "
                                        "(netem loss cannot be seeded)")
        elif self.has("linkemu"):
            chosen["delay"] = ("emulator", "sch_netem is missing: the userspace link emulator carries delay, "
                                           "rate, buffer and loss")
        else:
            chosen["delay"] = ("none", "neither sch_netem nor the built link emulator is available")
        chosen["loss"] = (("emulator", "seeded, per packet index, repeatable") if self.has("linkemu")
                          else ("netem", "emulator not built: loss is random, not seeded") if self.has("netem")
                          else ("none", "neither the link emulator nor sch_netem is available"))
        kernel_aqm = ", ".join(f"sch_{m}" for m in sorted(self.tc_aqms()))
        tc_aqm = (f"links with backend: tc use the kernel's {kernel_aqm}" if kernel_aqm
                  else "this kernel has no sch_red, sch_codel or sch_pie")
        chosen["aqm"] = (("emulator", f"RED, CoDel and PIE run as their papers define them, seeded; {tc_aqm}")
                         if self.has("linkemu") else ("tc", f"linkemu is not built: {tc_aqm}") if kernel_aqm
                         else ("none", f"linkemu is not built and {tc_aqm}"))
        chosen["switch"] = self.switch_choice("auto")
        chosen["congestion control"] = self.cc_backend(self.cc_impl_choice("auto"))
        chosen["flow tracing"] = ("tcp_info", "per-socket getsockopt(TCP_INFO) in each sender")
        chosen["link tracing"] = (("emulator counters", "the emulator reports its own queue")
                                  if chosen["delay"][0] == "emulator"
                                  else ("rtnetlink qdisc dump", "tc queue counters over netlink"))
        return chosen

    def tc_aqms(self) -> frozenset[str]:
        """The AQM models (spec names) whose kernel qdisc works here: red, codel, pie."""
        return frozenset(model for model in AQM_QDISCS if self.has(f"sch_{model}"))

    def switch_choice(self, wanted: str) -> tuple[str, str]:
        """Pick the switch implementation.

        auto: the OVS kernel datapath where it exists, else Linux bridges -- the OVS userspace
        datapath needs offloads off (so no TSO super-frames) and costs ~0.8 core at 8 kpps, which
        is the emulation's whole budget at 1 Gb/s. ovs: OVS, kernel datapath else userspace (what
        an OpenFlow core needs)."""
        ovs_up = self.has("ovs_running")
        if ovs_up and self.has("ovs_kernel") and wanted in ("auto", "ovs"):
            return "ovs-kernel", "openvswitch kernel datapath present"
        if wanted == "ovs":
            if ovs_up:
                return "ovs-user", "no openvswitch kernel datapath: OVS userspace (netdev) datapath, offloads off"
            return "unavailable", "ovs-vswitchd is not running (run `make setup`)"
        if wanted == "auto":
            return "bridge", ("no openvswitch kernel datapath: Linux bridges (they carry TSO super-frames; OVS's "
                              "userspace datapath needs offloads off and ~0.8 core at 8 kpps)" if ovs_up else
                              "ovs-vswitchd is not running: Linux bridge")
        return "bridge", "spec asks for a Linux bridge"

    @staticmethod
    def cc_backend(choice: tuple[str, str]) -> tuple[str, str]:
        """A cc_impl_choice as doctor and environment.json name the backend: (name, why)."""
        impl, why = choice
        return {"bpf": "bpf struct_ops", "module": "kernel module"}.get(impl, impl), why

    def cc_impl_choice(self, wanted: str) -> tuple[str, str]:
        """Pick the build of fastlab's own algorithms (FAST, HSTCP): (impl, why), impl being a key
        of `ccset.LOADERS` or "unavailable".

        auto: BPF struct_ops where the kernel has them (per-namespace parameters, state events),
        else the loadable modules; bpf / module: that build, or "unavailable" and why not."""
        bpf = self.has("bpf_struct_ops")
        modules = self.has("modules")
        if wanted == "auto":
            if bpf:
                return "bpf", "BTF and struct_ops tcp_congestion_ops present"
            if modules:
                return "module", "no BPF struct_ops here; loadable kernel modules (global parameters)"
            return "unavailable", "neither BPF struct_ops nor module loading: kernel built-ins only"
        if wanted == "bpf":
            return ("bpf", "the spec asks for the BPF struct_ops build") if bpf else (
                "unavailable", "this kernel has no BPF struct_ops for TCP congestion control")
        if wanted == "module":
            return ("module", "the spec asks for the loadable-module build") if modules else (
                "unavailable", "this kernel cannot load modules (CONFIG_MODULES off)")
        return "unavailable", f"unknown build {wanted!r} (auto, bpf or module)"

    def as_dict(self) -> dict[str, object]:
        return {"kernel": self.kernel,
                "probes": {k: asdict(v) for k, v in self.probes.items()},
                "backends": {job: {"backend": b, "why": w} for job, (b, w) in self.backends().items()}}


def _run(argv: list[str], timeout: float = 10) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)


def _in_scratch_netns(script: list[list[str]]) -> tuple[bool, str]:
    """Run commands in a fresh, unnamed network namespace that vanishes with the process."""
    if not shutil.which("unshare"):
        return False, "unshare missing"
    joined = " && ".join(" ".join(cmd) for cmd in script)
    proc = _run(["unshare", "-n", "sh", "-c", "ip link set lo up && " + joined])
    return proc.returncode == 0, (proc.stderr.strip().splitlines() or ["ok"])[-1]


def _qdisc(kind: str, args: str) -> Probe:
    ok, detail = _in_scratch_netns([["tc", "qdisc", "add", "dev", "lo", "root", kind, args]])
    return Probe(f"sch_{kind}", ok, f"sch_{kind} works" if ok else f"sch_{kind} unusable: {detail}")


def _tool_version(name: str, argv: list[str]) -> Probe:
    path = shutil.which(argv[0])
    if not path:
        return Probe(name, False, f"{argv[0]} not installed")
    proc = _run(argv)
    text = (proc.stdout or proc.stderr).strip().splitlines()
    return Probe(name, proc.returncode == 0, text[0] if text else path)


def _exists(path: Path, directory: bool = False) -> bool:
    """Whether a path exists, False where this user may not look (tracefs is root-only)."""
    try:
        return path.is_dir() if directory else path.exists()
    except PermissionError:
        return False


def probe() -> Capabilities:
    caps = Capabilities(kernel=platform.release())
    p = caps.probes

    def add(key: str, probe_: Probe) -> None:
        p[key] = probe_

    netem = _qdisc("netem", "delay 1ms")
    add("netem", Probe("netem", netem.present, netem.detail))
    add("htb", _qdisc("htb", "default 1"))
    add("tbf", _qdisc("tbf", "rate 10mbit burst 10kb latency 10ms"))
    for model, args in AQM_QDISCS.items():  # sch_red, sch_codel, sch_pie: the tc backend's AQM
        add(f"sch_{model}", _qdisc(model, args))
    add("modules", Probe("modules", Path("/proc/modules").exists(),
                         "loadable modules supported" if Path("/proc/modules").exists()
                         else "CONFIG_MODULES off: kernel modules cannot be loaded"))
    btf = Path("/sys/kernel/btf/vmlinux")
    has_tcp_ops = btf.exists() and b"bpf_struct_ops_tcp_congestion_ops" in btf.read_bytes()
    add("bpf_struct_ops", Probe("bpf_struct_ops", has_tcp_ops and bool(shutil.which("bpftool")),
                                "BTF has tcp_congestion_ops struct_ops" + ("" if shutil.which("bpftool")
                                                                           else "; bpftool missing")
                                if has_tcp_ops else "no BTF or no tcp_congestion_ops struct_ops"))
    ovs_kernel = Path("/sys/module/openvswitch").exists() or any(
        Path("/lib/modules", platform.release()).glob("kernel/net/openvswitch/openvswitch.ko*"))
    add("ovs_kernel", Probe("ovs_kernel", ovs_kernel,
                            "openvswitch kernel datapath" if ovs_kernel else "no openvswitch kernel module"))
    ovs = _run(["ovs-vsctl", "--timeout=3", "show"]) if shutil.which("ovs-vsctl") else None
    add("ovs_running", Probe("ovs_running", bool(ovs and ovs.returncode == 0),
                             "ovs-vswitchd answers" if ovs and ovs.returncode == 0
                             else "ovs-vsctl missing or ovsdb/vswitchd not running"))
    events = [t / "events/tcp/tcp_probe" for t in TRACEFS]
    tp = any(_exists(e) for e in events)
    mounted = any(_exists(t / "events", directory=True) for t in TRACEFS)
    add("tcp_probe", Probe("tcp_probe", tp, "tcp:tcp_probe tracepoint" if tp else
                           "tracepoint absent" if mounted else "tracefs not mounted (make setup mounts it)"))
    tun = Path("/dev/net/tun").exists()
    add("tun", Probe("tun", tun, "/dev/net/tun" if tun else "no /dev/net/tun"))
    iptables = shutil.which("iptables-legacy") or shutil.which("iptables")
    if iptables:
        ok, detail = _in_scratch_netns([[iptables, "-A", "OUTPUT", "-j", "NFQUEUE", "--queue-num", "7"]])
    else:
        ok, detail = False, "iptables missing"
    add("nfqueue", Probe("nfqueue", ok, "iptables NFQUEUE target works" if ok else detail))
    add("iperf3", _tool_version("iperf3", ["iperf3", "--version"]))
    try:
        import mininet.net  # noqa: F401
        from mininet.net import VERSION
        add("mininet", Probe("mininet", True, f"Mininet {VERSION}"))
    except ImportError as exc:
        add("mininet", Probe("mininet", False, f"cannot import mininet: {exc}"))
    cg_root, clamp = cgroup2_root(), paths.clamp_binary()
    add("cwnd_clamp", Probe("cwnd_clamp", cg_root is not None and clamp.exists(),
                            f"cgroup v2 at {cg_root}, {clamp}" if cg_root is not None and clamp.exists()
                            else "no cgroup v2 hierarchy mounted" if cg_root is None
                            else f"{clamp} not built (run `make setup`)"))
    emu = paths.linkemu_binary()
    add("linkemu", Probe("linkemu", emu.exists(), str(emu) if emu.exists()
                         else f"{emu} not built (run `make setup`)"))
    return caps


def app_available() -> tuple[bool, str]:
    """Whether the controller framework (os-ken) imports here."""
    try:
        import os_ken  # noqa: F401
    except ImportError as exc:
        return False, f"os-ken is not installed ({exc}); run `make setup`"
    return True, "os-ken"
