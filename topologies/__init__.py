"""Networks fastlab can emulate: one module per topology, each exposing NAME, DESCRIPTION,
an `Args` schema (pydantic, unknown arguments refused) and `plan(args) -> TopologyPlan`."""
