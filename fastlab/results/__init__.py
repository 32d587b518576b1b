"""Stage 8, results: what people read of a run -- its report page, tables and charts, bundles, and results in
Python (api, client) -- through the run folder's one reader and writer (fastlab.base.rundir).
May import the stages before it (base .. theory).

The order of stages is enforced by tests/unit/test_import_graph.py."""
