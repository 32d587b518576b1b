"""One TCP flow end: `send` or `recv`, run inside a host's namespace by the traffic layer.

The sender sets the flow's congestion control on its own socket (TCP_CONGESTION), sends as
fast as TCP lets it for the flow's duration, and samples its socket's tcp_info every interval,
printing one JSON line per sample (CLOCK_MONOTONIC time). The receiver drains and reports the
byte count. A sender given `--cgroup` waits until the traffic layer has moved it into that cgroup
before it opens its socket, so the run's window clamp (fastlab.run.cwndclamp) applies to it.
Exit status 2 with one line on stderr for a setup error (e.g. unknown CC).
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import threading
import time

from fastlab.run import tcpinfo

CHUNK_BYTES = 256 * 1024
CONNECT_TIMEOUT_S = 10.0


def emit(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


CGROUP_WAIT_S = 5.0


def in_cgroup(proc_self_cgroup: str, name: str) -> bool:
    """Whether /proc/self/cgroup's text puts this process in the cgroup v2 directory /NAME (pure)."""
    return f"0::/{name}" in proc_self_cgroup.splitlines()


def wait_for_cgroup(name: str, timeout_s: float = CGROUP_WAIT_S) -> str | None:
    """Wait until the traffic layer has moved this process into cgroup /NAME; None, or why not.

    Mininet hosts mount their own /sys, so the cgroup tree is not visible from here: the parent,
    which sees it, writes this PID into the cgroup, and no socket may exist before that."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with open("/proc/self/cgroup") as f:
            if in_cgroup(f.read(), name):
                return None
        time.sleep(0.01)
    return f"not moved into cgroup {name} within {timeout_s:g} s"


def wait_for_go(line: str) -> tuple[float, float] | None:
    """The traffic layer's go line (pure): {"start_at": T, "stop_at": T} on the monotonic clock every
    namespace shares; None for anything else (an empty line: the run ended before its flows started)."""
    try:
        msg = json.loads(line)
        start_at, stop_at = float(msg["start_at"]), float(msg["stop_at"])
    except (ValueError, KeyError, TypeError):
        return None
    return start_at, stop_at


def send(args: argparse.Namespace) -> int:
    if args.cgroup and (why := wait_for_cgroup(args.cgroup)):
        print(why, file=sys.stderr)
        return 2
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, args.cc.encode())
    except OSError as exc:
        print(f"cannot use congestion control {args.cc!r}: {exc.strerror}", file=sys.stderr)
        return 2
    planned_stop: float | None = None  # the run's planned end, when the traffic layer gives it
    if args.go_on_stdin:
        # Started before the flows' time zero and told when to begin: the interpreter's start (tenths of a
        # second here, seconds in an emulated guest or beside other runs) is paid before it, so flows that
        # start together do -- a FAST flow that starts after its neighbours has filled the queue never sees
        # the empty path (bench/classroom.py, 2026-11-27: 143 ms apart, one run's f2 kept ~4 extra packets).
        emit({"event": "ready", "flow": args.flow, "t": time.monotonic()})
        go = wait_for_go(sys.stdin.readline())
        if go is None:
            return 0  # the run ended (or failed) before this flow's start: nothing to send
        planned_stop = go[1]
        time.sleep(max(0.0, go[0] - time.monotonic()))
    deadline = time.monotonic() + CONNECT_TIMEOUT_S
    while True:
        try:
            sock.connect((args.dst, args.port))
            break
        except OSError as exc:
            if time.monotonic() > deadline:
                print(f"cannot connect to {args.dst}:{args.port}: {exc.strerror}", file=sys.stderr)
                return 1
            time.sleep(0.05)
    chosen = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).split(b"\0")[0].decode()
    start = time.monotonic()
    stop_at = stop_time(start, args.duration_s, planned_stop)
    emit({"event": "start", "flow": args.flow, "t": start, "cc": chosen})
    done = threading.Event()

    def pump() -> None:
        payload = memoryview(bytearray(CHUNK_BYTES))
        try:
            while not done.is_set():
                sock.send(payload)
        except OSError:
            pass

    sender = threading.Thread(target=pump, daemon=True)
    sender.start()
    last_t, last_acked = start, 0
    next_t = start + args.interval_s
    while True:
        now = time.monotonic()
        if now >= stop_at:
            break
        time.sleep(max(0.0, min(next_t, stop_at) - now))
        next_t += args.interval_s
        info = tcpinfo.parse(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 512))
        s = tcpinfo.sample(info)
        if chosen in tcpinfo.VEGAS_FORMAT_CCS:
            s.update(tcpinfo.cc_info_sample(chosen, sock.getsockopt(socket.IPPROTO_TCP, tcpinfo.TCP_CC_INFO,
                                                                    tcpinfo.CC_INFO_BYTES)))
        t = time.monotonic()
        acked = int(info.get("bytes_acked", 0))
        s["goodput_mbps"] = (acked - last_acked) * 8 / 1e6 / max(t - last_t, 1e-6)
        last_t, last_acked = t, acked
        emit({"event": "sample", "flow": args.flow, "t": t, **s})
    done.set()
    info = tcpinfo.parse(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 512))
    end = time.monotonic()
    sock.close()  # RST if data is unsent: the flow's time is over
    sender.join(timeout=2)
    emit({"event": "done", "flow": args.flow, "t": end, "start": start, "bytes_acked": info["bytes_acked"],
          "retransmits": info["total_retrans"], "min_rtt_ms": info["min_rtt"] / 1000})
    return 0


def stop_time(start: float, duration_s: float, stop_at: float | None) -> float:
    """When a sender stops (pure): at the run's planned end when the traffic layer gives it (its go line, on the
    monotonic clock every namespace shares), so that a sender that started late -- a Python interpreter
    takes seconds to start on a slow or emulated machine -- still ends with the others instead of running
    its whole duration past the run's end; never later than `duration_s` after its own start."""
    end = start + duration_s
    return end if stop_at is None else min(end, stop_at)


def recv(args: argparse.Namespace) -> int:
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((args.bind, args.port))
    srv.listen(1)
    srv.settimeout(args.duration_s)
    emit({"event": "listening", "flow": args.flow, "t": time.monotonic()})
    try:
        conn, _ = srv.accept()
    except TimeoutError:
        print("no sender connected", file=sys.stderr)
        return 1
    conn.settimeout(args.duration_s)
    buf = bytearray(CHUNK_BYTES)
    total, first = 0, None
    try:
        while n := conn.recv_into(buf):
            if first is None:
                first = time.monotonic()
            total += n
    except (TimeoutError, ConnectionResetError):
        pass
    emit({"event": "done", "flow": args.flow, "t": time.monotonic(), "first": first, "bytes": total})
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fastlab-flow")
    sub = parser.add_subparsers(dest="role", required=True)
    s = sub.add_parser("send")
    s.add_argument("--dst", required=True)
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--cc", required=True)
    s.add_argument("--duration-s", type=float, required=True)
    s.add_argument("--go-on-stdin", action="store_true",
                   help="say ready, then start at the start_at of a JSON line read from stdin (its stop_at too)")
    s.add_argument("--interval-s", type=float, default=0.05)
    s.add_argument("--flow", required=True)
    s.add_argument("--cgroup", help="name of the cgroup v2 directory (under the hierarchy's root) to be in "
                                    "before the socket is opened: its sock_ops program clamps the window")
    r = sub.add_parser("recv")
    r.add_argument("--bind", required=True)
    r.add_argument("--port", type=int, required=True)
    r.add_argument("--duration-s", type=float, required=True)
    r.add_argument("--flow", required=True)
    args = parser.parse_args(argv)
    return send(args) if args.role == "send" else recv(args)


if __name__ == "__main__":
    sys.exit(main())
