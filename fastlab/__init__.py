"""fastlab: a Mininet-based emulation and teaching lab for TCP congestion control."""

__version__ = "0.1.0"

# Importing mininet.log makes Mininet's logger class every new logger's (logging.setLoggerClass): a
# fastlab module first imported after Mininet (the web worker imports the engine lazily, after the
# capability probe has imported Mininet) got a MininetLogger at level 25 with its own stderr handler,
# which dropped the engine's INFO progress lines from the live page and printed warnings twice (found
# when the unit tier ran on two cores). Mininet is imported here once, then the class is put back;
# Mininet's own logger keeps its class. Where Mininet cannot be imported (the check tier's virtualenv; a
# flow tool started as `python -S`, fastlab.run.traffic) there is nothing to undo, and logging is not
# imported: a flow tool's start is most of a second of CPU in an emulated guest.
try:
    import mininet.log  # noqa: F401
except ImportError:
    pass
else:
    import logging

    logging.setLoggerClass(logging.Logger)
