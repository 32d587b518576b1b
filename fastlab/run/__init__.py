"""Stage 5, run: what happens on the built network while a run goes — flows (traffic, flowtool,
tcp_info), congestion controls loaded and changed (ccruntime, cwndclamp), OpenFlow control, the sample bus.
May import: base, define, plan, net.

The order of stages is enforced by tests/unit/test_import_graph.py."""
