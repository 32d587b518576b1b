"""Stage 4, net: the plan's network made real and undone — run ownership and cleanup (runstate), hosts,
routers and switches (network), shaped and emulated links (shaping, linkemu control), CPU placement, queue
statistics of tc links. May import: base, define, plan.

The order of stages is enforced by tests/unit/test_import_graph.py."""
