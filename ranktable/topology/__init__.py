"""Network topology: the switch tree model and loaders for every format the platform and clusters use.

``load_topology(path)`` reads any supported file (format detected from content); the ``topology_from_*``
functions build the same model from objects already in memory (e.g. read from the Kubernetes API).
Names are imported on first use (PEP 562): a command that reads one format loads only that reader (and
none of the YAML library when it reads none).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ranktable.lazy import lazy_exports

if TYPE_CHECKING:
    from ranktable.topology.export import (
        to_hypernodes,
        to_node_labels,
        to_slurm,
        to_tor_configmap,
        to_tor_info,
    )
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

_HOMES = {
    "DEFAULT_LABEL_KEYS": "labels",
    "FORMATS": "load",
    "HostlistError": "hostlist",
    "NVIDIA_LABEL_KEYS": "labels",
    "RANKTABLE_LABEL_KEYS": "labels",
    "Switch": "model",
    "TOR_LEVELS": "tor_info",
    "Topology": "model",
    "add_node_aliases": "k8s_nodes",
    "decode_tor_file": "tor_file",
    "detect_format": "load",
    "dump_topology_yaml": "yaml_format",
    "encode_tor_file": "tor_file",
    "expand_hostlist": "hostlist",
    "load_hypernodes_text": "hypernode",
    "load_topology": "load",
    "read_nodes": "k8s_nodes",
    "synthetic_topology": "synthetic",
    "to_hypernodes": "export",
    "to_node_labels": "export",
    "to_slurm": "export",
    "to_tor_configmap": "export",
    "to_tor_info": "export",
    "topology_from_hypernodes": "hypernode",
    "topology_from_node_labels": "labels",
    "topology_from_slurm": "slurm",
    "topology_from_tor_configmap": "tor_info",
    "topology_from_tor_file": "tor_file",
    "topology_from_tor_info": "tor_info",
    "topology_from_yaml": "yaml_format",
}


__getattr__ = lazy_exports(__name__, _HOMES, globals())


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
