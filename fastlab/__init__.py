"""fastlab: a Mininet-based emulation and teaching lab for TCP congestion control."""

__version__ = "0.1.0"
