"""What the queue's admission keeps of each run it starts, and a queued spec's predicted cost
(fastlab.experiment.cost); fastlab.service.queue.RunManager decides with them."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from fastlab.experiment import cost as cost_model
from fastlab.experiment.cost import Cost, for_spec
from fastlab.run.ccruntime import LiveControl


@dataclass
class Going:
    """A run the queue has started: its predicted cost, the admission decision that started it, and
    what a request may do to it (cancel it, change its parameters while its flows run)."""

    run_id: str
    cost: Cost
    admission: dict[str, Any]
    cancel: threading.Event = field(default_factory=threading.Event)
    live: LiveControl | None = None
    thread: threading.Thread | None = None


def predicted(spec: Any, caps: Any) -> tuple[Cost, dict[str, Any]]:
    """A queued spec's predicted cost and the machine's figures (fastlab.experiment.cost); a spec that no longer
    prepares here runs alone (it fails at once, with the engine's own message)."""
    from fastlab.plan.prepare import prepare

    try:
        cost, figures = for_spec(prepare(spec, caps=caps))
    except Exception as exc:  # noqa: BLE001 - any failure to plan is the engine's to report
        return Cost(0.0, {}, f"its cost could not be predicted ({exc.__class__.__name__}: {exc})"), {}
    return cost, figures.as_dict()


def carry_warning(prepared: Any) -> str | None:
    """What to tell a person before a prepared run this machine cannot carry faithfully (fastlab.experiment.cost's
    model: fastlab.experiment.cost.carry_warning); None when it can, or when its cost cannot be predicted."""
    try:
        return cost_model.carry_warning(*for_spec(prepared))
    except (ValueError, KeyError, TypeError, OSError):
        return None
