"""The parking lot (parking_lot.py beside this file) run from Python: `sudo .venv/bin/python run.py`."""
from pathlib import Path

import fastlab

flows = [{"src": "h1", "dst": "h2", "cc": "cubic"}, {"src": "h3", "dst": "h4", "cc": "cubic"},
         {"src": "h5", "dst": "h6", "cc": "cubic"}]
spec = fastlab.Spec(name="parking-lot", topology={"file": str(Path(__file__).with_name("parking_lot.py"))},
                    topology_args={"rate_mbps": 20, "hop_rtt_ms": 10}, duration_s=5, flows=flows)
result = fastlab.run(spec)  # as root: builds the network, runs the flows, removes the network
run = fastlab.load(result.directory)
print(run.table("flows").to_string(index=False))
print(f"faithful: {run.faithful}; results in {result.directory}")
