"""Named scalar metrics of a run summary, shared by sweep aggregation and bundle replay.

`summary_metrics(summary)` flattens summary.json into `flow.<id>.<field>`,
`link.<id>.<field>`, `idle.<src>-<dst>.<field>` and run-wide names (`jain_index`,
`total_throughput_mbps`). The last dotted part of a name is the summary field it came from,
which is what replay tolerances are keyed on. Pure functions.
"""

from __future__ import annotations

from typing import Any

FLOW_FIELDS = ("throughput_mbps", "mean_rtt_ms", "min_rtt_ms", "mean_cwnd_pkts", "retransmits")
LINK_FIELDS = ("utilization", "mean_backlog_pkts", "max_backlog_pkts", "drops", "queue_drops", "loss_drops",
               "aqm_drops", "aqm_marks")
IDLE_FIELDS = ("min_ms", "median_ms")


def summary_metrics(summary: dict[str, Any]) -> dict[str, float | None]:
    """Flat name -> value (None where the run had no sample)."""
    out: dict[str, float | None] = {}
    for flow in summary.get("flows", []):
        for name in FLOW_FIELDS:
            out[f"flow.{flow['id']}.{name}"] = flow.get(name)
    for link in summary.get("links", []):
        for name in LINK_FIELDS:
            out[f"link.{link['id']}.{name}"] = link.get(name)
    for idle in summary.get("idle_rtt", []):
        for name in IDLE_FIELDS:
            out[f"idle.{idle['src']}-{idle['dst']}.{name}"] = idle.get(name)
    out["total_throughput_mbps"] = round(sum(f.get("throughput_mbps") or 0.0 for f in summary.get("flows", [])), 4)
    out["jain_index"] = summary.get("jain_index")
    return out


def metric_names(flow_ids: list[str], link_ids: list[str]) -> list[str]:
    """The names `summary_metrics` gives a run with these flows and links (known before it runs)."""
    return ([f"flow.{f}.{n}" for f in flow_ids for n in FLOW_FIELDS]
            + [f"link.{link}.{n}" for link in link_ids for n in LINK_FIELDS]
            + ["total_throughput_mbps", "jain_index"])
