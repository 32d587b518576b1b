"""Stage 12, sweep: parameter sweeps — points, running them (here or on a cluster), scaling, tables.
May import the stages before it.

The order of stages is enforced by tests/unit/test_import_graph.py."""
