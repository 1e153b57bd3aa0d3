"""HCCL rank tables (`jobstart_hccl.json`): model, reading, writing and validation."""

from ranktable.hccl.io import (
    dump_rank_table,
    load_rank_table,
    parse_rank_table,
    rank_table_to_dict,
    read_rank_table_lenient,
    write_rank_table,
)
from ranktable.hccl.model import Device, RankTable, Server, SuperPod
from ranktable.hccl.validate import (
    ValidationReport,
    check_document,
    check_file,
    check_rank_table,
    validate_rank_table,
)

__all__ = [
    "Device",
    "RankTable",
    "Server",
    "SuperPod",
    "ValidationReport",
    "check_document",
    "check_file",
    "check_rank_table",
    "dump_rank_table",
    "load_rank_table",
    "parse_rank_table",
    "rank_table_to_dict",
    "read_rank_table_lenient",
    "validate_rank_table",
    "write_rank_table",
]
