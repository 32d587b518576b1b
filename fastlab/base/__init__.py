"""Stage 1, base: what every stage may use — where things live (paths; rundir, the one reader and
writer of run folders: their layout, created by the engine, read by every later stage; record, what a
run folder's summary.json and environment.json hold: the typed, versioned run record and its headline
figures), the bounded reader of documents and checked names, and the one way a run starts, watches and
stops a process (supervised). May import: nothing of fastlab outside base.

The order of stages is enforced by tests/unit/test_import_graph.py."""
