"""Stage 10, service: the one execution service — where every front end's runs are carried out.

`run.execute` runs one experiment here, serially (`fastlab run`, a lab's steps, a sweep's points, the
Python API, the queue's in-process runs); `queue.RunManager` is the queue of runs (its store, the SQLite
history `store`, survives restarts) that starts each run when its predicted cost fits the machine's budget
(`admission`, fastlab.experiment.cost) and fans its live samples out (`samples`); `cluster` is the one
Dask submission path (the web queue's runs and a sweep's points go through `cluster.submit`) and `worker`
the task that runs there. The web app is an HTTP adaptor over this stage: it holds no queue, admission
or Dask code of its own (tests/unit/test_service_rules.py). May import the stages before it.

The order of stages is enforced by tests/unit/test_import_graph.py."""
