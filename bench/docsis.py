"""DOCSIS calibration: the emulated cable path against the published measurements, side by side.

The study (Atov, Andrew, Kennedy, Wydrowski, "FAST TCP over low-speed DOCSIS access": a real Cisco
CMTS and cable modem, 3 Mb/s down / 512 kb/s up, 100 ms of base RTT added by Dummynet, 1500-byte
packets, averages over 100 runs) measured, on DOCSIS and on a simple link of the same capacities:
- throughput, mean RTT and minimum RTT against a *fixed* window (here `max_cwnd_pkts`, Reno held at
  w: below the path's BDP + buffer nothing is lost, so the window stays at w);
- the smallest FAST alpha that fills the downstream.
This script runs both on `docsis` (`mode: docsis` and `mode: simple`) and prints, per window and per
alpha, the emulated figure beside the published one. Published figures used (the issue's reading of
the paper): simple link mean RTT 100 ms + max(0, w - 25) x 4 ms (BDP 25 packets at 100 ms; one
1500-byte packet is 4 ms at 3 Mb/s), full rate from w = 25-28; DOCSIS mean RTT about 145 ms
(130-160) for w = 20-38 and a minimum RTT that rises with w (the "phantom delay"); alpha needed:
about 4 (3-5) on the simple link, about 13 (10-16) on DOCSIS.

Measured per run, after --warmup seconds: goodput (bytes acked over time); for the fixed windows the
mean and the minimum of every RTT sample the kernel took (one per ACK, from `rtt_samples.csv`: the
paper's per-packet figures; tcp_info's srtt is an EWMA and its min_rtt includes the handshake's
small packets); for FAST the mean of srtt. Medians over --repeat runs (seed + r) are printed.

Run as root: `sudo .venv/bin/python bench/docsis.py [--windows 5,10,...] [--alphas 1,2,...]
[--repeat N] [--duration S] [--only windows|alpha] [--mode docsis|simple]`.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fastlab.engine import run_experiment  # noqa: E402
from fastlab.spec import parse_spec  # noqa: E402

DOWN_MBPS = 3.0
BASE_RTT_MS = 100.0
PKT_BYTES = 1500
PKT_MS = PKT_BYTES * 8 / (DOWN_MBPS * 1e3)  # 4 ms of downstream per packet
BDP_PKTS = BASE_RTT_MS / PKT_MS  # 25
FULL = 0.95  # "full utilization" in the alpha sweep
PUBLISHED_ALPHA = {"simple": (4, 3, 5), "docsis": (13, 10, 16)}  # (value, low, high) of the band
DOCSIS_RTT_BAND = (130.0, 160.0, 20, 38)  # mean RTT band (ms) for windows 20..38


def published_mean_rtt(mode: str, w: int) -> str:
    if mode == "simple":
        return f"{BASE_RTT_MS + max(0.0, w - BDP_PKTS) * PKT_MS:.0f}"
    low, high, w_low, w_high = DOCSIS_RTT_BAND
    return f"{low:.0f}-{high:.0f}" if w_low <= w <= w_high else "-"


def spec_for(mode: str, duration_s: float, seed: int, flow: dict[str, Any], name: str) -> Any:
    return parse_spec({"name": name, "topology": "docsis", "topology_args": {"mode": mode},
                       "duration_s": duration_s, "seed": seed, "switch": "bridge",
                       "flows": [{"src": "server", "dst": "client", **flow}]})


def steady_figures(out: Path, warmup_s: float) -> dict[str, float]:
    flows = pd.read_csv(out / "flows.csv")
    steady = flows[flows["t"] >= warmup_s]
    acked = steady["bytes_acked"].iloc[-1] - steady["bytes_acked"].iloc[0]
    mbps = acked * 8 / 1e6 / (steady["t"].iloc[-1] - steady["t"].iloc[0])
    summary = json.loads((out / "summary.json").read_text())
    figures = {"goodput_mbps": mbps, "utilization": mbps / (DOWN_MBPS * 1448 / 1500),
               "mean_rtt_ms": steady["srtt_ms"].mean(), "min_rtt_ms": float("nan"),
               "cwnd_max": steady["cwnd_pkts"].max(), "retransmits": int(steady["retransmits"].iloc[-1]),
               "faithful": summary["fidelity"]["faithful"]}
    if (out / "rtt_samples.csv").exists():  # per-packet RTTs of a clamped flow
        rtts = pd.read_csv(out / "rtt_samples.csv")
        rtts = rtts[rtts["t"] >= warmup_s]
        figures["mean_rtt_ms"] = (rtts["mean_rtt_ms"] * rtts["samples"]).sum() / rtts["samples"].sum()
        figures["min_rtt_ms"] = rtts["min_rtt_ms"].min()
    return figures


def fixed_window(mode: str, w: int, seed: int, args: argparse.Namespace, root: Path) -> dict[str, Any]:
    out = root / f"w-{mode}-{w}-{seed}"
    run_experiment(spec_for(mode, args.duration, seed, {"cc": "reno", "max_cwnd_pkts": w},
                            f"docsis-w{w}-{mode}"), out=out)
    return {"mode": mode, "window": w, "seed": seed, **steady_figures(out, args.warmup)}


def alpha_run(mode: str, alpha: int, seed: int, args: argparse.Namespace, root: Path) -> dict[str, Any]:
    out = root / f"a-{mode}-{alpha}-{seed}"
    run_experiment(spec_for(mode, args.duration, seed, {"cc": "fast", "cc_args": {"alpha": alpha}},
                            f"docsis-a{alpha}-{mode}"), out=out)
    return {"mode": mode, "alpha": alpha, "seed": seed, **steady_figures(out, args.warmup)}


def ints(text: str) -> list[int]:
    return [int(v) for v in text.split(",") if v.strip()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", type=ints, default=ints("5,10,15,20,25,28,30,38,45"))
    parser.add_argument("--alphas", type=ints, default=ints("1,2,3,4,5,6,8,10,13,16,20"))
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--duration", type=float, default=30.0, help="seconds per run")
    parser.add_argument("--warmup", type=float, default=8.0, help="seconds left out of every figure")
    parser.add_argument("--only", choices=("windows", "alpha"))
    parser.add_argument("--mode", choices=("docsis", "simple"), help="one link only (default: both, side by side)")
    args = parser.parse_args()
    modes = [args.mode] if args.mode else ["simple", "docsis"]
    root = Path(tempfile.mkdtemp(prefix="fastlab-docsis-"))
    pd.set_option("display.width", 200)
    if args.only != "alpha":
        rows = [fixed_window(mode, w, 1 + r, args, root)
                for r in range(args.repeat) for w in args.windows for mode in modes]
        table = pd.DataFrame(rows)
        med = table.groupby(["window", "mode"], sort=True)[
            ["goodput_mbps", "utilization", "mean_rtt_ms", "min_rtt_ms"]].median().reset_index()
        med["published_mean_rtt_ms"] = [published_mean_rtt(m, w)
                                        for m, w in zip(med["mode"], med["window"], strict=True)]
        med["w_over_rtt_mbps"] = med["window"] * PKT_BYTES * 8 / 1e3 / med["mean_rtt_ms"]
        print(f"fixed windows (Reno held at w), medians of {args.repeat} run(s):")
        print(med.to_string(index=False, float_format="{:.2f}".format))
    if args.only != "windows":
        rows = [alpha_run(mode, a, 1 + r, args, root)
                for r in range(args.repeat) for a in args.alphas for mode in modes]
        table = pd.DataFrame(rows)
        med = table.groupby(["alpha", "mode"], sort=True)[["utilization", "mean_rtt_ms", "cwnd_max"]].median()
        print(f"\nFAST alpha (one flow), medians of {args.repeat} run(s):")
        print(med.reset_index().to_string(index=False, float_format="{:.2f}".format))
        for mode in modes:
            util = med.xs(mode, level="mode")["utilization"]
            full = [a for a, u in util.items() if u >= FULL]
            value, low, high = PUBLISHED_ALPHA[mode]
            print(f"{mode}: smallest alpha with >= {FULL:.0%} utilization: {full[0] if full else 'none'} "
                  f"(published about {value}, band {low}-{high})")
    print(json.dumps({"duration_s": args.duration, "warmup_s": args.warmup, "repeat": args.repeat,
                      "runs": str(root)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
