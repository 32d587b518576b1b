"""Stage 5, run: what happens on the built network while a run goes — flows (traffic, flowtool,
tcp_info), congestion controls loaded and changed (ccruntime, ccload, cwndclamp), OpenFlow control, the
sample bus. May import: base, define, plan, net.

This package is also `fastlab.run(spec)`, the function that runs an experiment (fastlab/__init__.py:
the package's top names it for scripts; calling it delegates to fastlab.experiment.engine).

The order of stages is enforced by tests/unit/test_import_graph.py."""

import sys

import fastlab

sys.modules[__name__].__class__ = fastlab._RunStage
