"""Stage 8, results: the run folder's one reader and writer (rundir), its report page, tables and charts,
bundles, and results in Python (api, client). May import the stages before it (base .. theory).

The order of stages is enforced by tests/unit/test_import_graph.py."""
