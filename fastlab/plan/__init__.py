"""Stage 3, plan: every "can this spec run here, and how" decision, made once by `prepare` — the
machine's capabilities, each link's backend and commands, flow ids, routes and path figures, FAST's targets,
per-host congestion-control parameters. Pure apart from the capability probe. May import: base, define.

The order of stages is enforced by tests/unit/test_import_graph.py."""
