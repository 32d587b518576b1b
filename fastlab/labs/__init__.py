"""Stage 11, labs: guided labs — loading and validating lab folders, the checkpoint kit, HSTCP's
checks, running steps through the engine and judging recorded runs. May import the stages before it.

The order of stages is enforced by tests/unit/test_import_graph.py."""
