"""Stage 9, experiment: carrying out a plan — the engine (build, flows, collect, write), replay of a
bundle, the self-test, the admission cost. May import the stages before it.

The order of stages is enforced by tests/unit/test_import_graph.py."""
