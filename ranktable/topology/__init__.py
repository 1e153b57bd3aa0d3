"""Network topology: the switch tree model and loaders for every format the platform and clusters use.

``load_topology(path)`` reads any supported file (format detected from content); the ``topology_from_*``
functions build the same model from objects already in memory (e.g. read from the Kubernetes API).
"""

from ranktable.topology.export import to_hypernodes, to_node_labels, to_slurm, to_tor_configmap, to_tor_info
from ranktable.topology.hostlist import HostlistError, expand_hostlist
from ranktable.topology.hypernode import load_hypernodes_text, topology_from_hypernodes
from ranktable.topology.k8s_nodes import add_node_aliases, read_nodes
from ranktable.topology.labels import (
    DEFAULT_LABEL_KEYS,
    NVIDIA_LABEL_KEYS,
    RANKTABLE_LABEL_KEYS,
    topology_from_node_labels,
)
from ranktable.topology.load import FORMATS, detect_format, load_topology
from ranktable.topology.model import Switch, Topology
from ranktable.topology.slurm import topology_from_slurm
from ranktable.topology.synthetic import synthetic_topology
from ranktable.topology.tor_file import decode_tor_file, encode_tor_file, topology_from_tor_file
from ranktable.topology.tor_info import TOR_LEVELS, topology_from_tor_configmap, topology_from_tor_info
from ranktable.topology.yaml_format import dump_topology_yaml, topology_from_yaml

__all__ = [
    "DEFAULT_LABEL_KEYS",
    "FORMATS",
    "NVIDIA_LABEL_KEYS",
    "RANKTABLE_LABEL_KEYS",
    "TOR_LEVELS",
    "HostlistError",
    "Switch",
    "Topology",
    "add_node_aliases",
    "decode_tor_file",
    "detect_format",
    "dump_topology_yaml",
    "encode_tor_file",
    "expand_hostlist",
    "load_hypernodes_text",
    "load_topology",
    "read_nodes",
    "synthetic_topology",
    "to_hypernodes",
    "to_node_labels",
    "to_slurm",
    "to_tor_configmap",
    "to_tor_info",
    "topology_from_hypernodes",
    "topology_from_node_labels",
    "topology_from_slurm",
    "topology_from_tor_configmap",
    "topology_from_tor_file",
    "topology_from_tor_info",
    "topology_from_yaml",
]
