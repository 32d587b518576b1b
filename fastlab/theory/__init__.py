"""Stage 7, theory: what the models predict — FAST's equilibrium and dynamics, HighSpeed TCP's
response function, Reno over RED, a run's parameter segments, and the "what happened" explanation.
May import the stages before it (base .. measure).

The order of stages is enforced by tests/unit/test_import_graph.py."""
