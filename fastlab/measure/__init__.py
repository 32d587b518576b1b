"""Stage 6, measure: what a run's traces and emulators say — the fidelity verdict and its inputs,
summaries of traces, named metrics. Pure functions of recorded data. May import: base, define, plan, net, run.

The order of stages is enforced by tests/unit/test_import_graph.py."""
