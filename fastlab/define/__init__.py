"""Stage 2, define: what a run asks for — the experiment spec's schema and overrides, topologies, mahimahi
link traces, and the congestion-control registry with its one table of parameters (FAST, HSTCP).
Pure descriptions and their checks. May import: base.

The order of stages is enforced by tests/unit/test_import_graph.py."""
