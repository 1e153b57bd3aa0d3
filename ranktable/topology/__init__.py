"""Network topology: the switch tree model and loaders for every format the platform and clusters use."""

from ranktable.topology.model import Switch, Topology

__all__ = ["Switch", "Topology"]
