"""OpenFlow controller apps (os-ken) for the switched parts of a topology: fastlab_paths programs each
flow's path. The engine starts one as `python -m controllers.fastlab_paths` (fastlab.run.controller)."""
