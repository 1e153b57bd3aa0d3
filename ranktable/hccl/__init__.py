"""HCCL rank tables (`jobstart_hccl.json`): model, reading, writing and validation."""

from ranktable.hccl.model import (
    STATUS_COMPLETED,
    STATUS_INITIALIZING,
    Device,
    RankTable,
    Server,
    SuperPod,
)

__all__ = ["STATUS_COMPLETED", "STATUS_INITIALIZING", "Device", "RankTable", "Server", "SuperPod"]
