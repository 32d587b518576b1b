"""The run record's parts: the base of every model (`Part`), a field with its unit and role (`figure`),
the figures shared by flows, links and segments, and the version the engine writes (SCHEMA_VERSION)."""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = 1


def figure(default: Any, unit: str, role: str) -> Any:
    """A record field: its default, its unit ("" for a name, a count of things or a ratio without one) and
    its role in words."""
    return Field(default, description=role, json_schema_extra={"unit": unit})


def _unit(unit: str, role: str) -> Any:
    return Field(description=role, json_schema_extra={"unit": unit})


class Part(BaseModel):
    """A part of the run record. Fields it does not name are kept (extra="allow"); assigning a field
    validates the value (the engine assigns plain data the measure stage computed)."""

    model_config = ConfigDict(extra="allow", validate_assignment=True, ser_json_inf_nan="null")

    def dump(self) -> dict[str, Any]:
        """The part as JSON data, as it goes into its file: only the fields that were given or read (a
        field a file did not have stays absent), in the order the models name them, then the kept ones; a
        value that is not a finite number as null (JSON has none), anything else JSON has no type for
        (a path) as its text."""
        return json.loads(self.model_dump_json(exclude_unset=True, fallback=str))  # its JSON's: NaN as null


# Figures shared by the run's and a segment's rows of a flow or a link.
Goodput = Annotated[float | None, _unit("Mb/s", "goodput: payload bytes acknowledged over the span, Mb/s")]
MeanRtt = Annotated[float | None, _unit("ms", "mean of the flow's smoothed RTT samples (tcp_info srtt)")]
MeanCwnd = Annotated[float | None, _unit("packets", "mean congestion window")]
Utilization = Annotated[float | None, _unit("fraction", "IP bytes the link sent over its capacity x the span "
                                                        "(0..1; the run's active window, or the segment's)")]
MeanBacklog = Annotated[float | None, _unit("packets", "mean queue over the span")]
QueueDrops = Annotated[int | None, _unit("packets", "packets dropped by the full queue (buffer overflow)")]
LossDrops = Annotated[int | None, _unit("packets", "packets dropped by the spec's loss model")]


def unit_of(model: type[BaseModel], name: str) -> str | None:
    """The unit of a model's field ("" for none), or None for a field the model does not name."""
    info = model.model_fields.get(name)
    if info is None:
        return None
    extra = info.json_schema_extra
    return str(extra.get("unit", "")) if isinstance(extra, dict) else ""
