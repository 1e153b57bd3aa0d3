"""Sync a local folder to a profile's remote root (see ``syncer`` for the rules)."""

from __future__ import annotations

from ranktable.remote.sync.ignore import DEFAULT_IGNORES, IgnoreRules
from ranktable.remote.sync.progress import ProgressEvent
from ranktable.remote.sync.syncer import Conflict, Syncer, SyncResult, confine_remote

__all__ = [
    "DEFAULT_IGNORES",
    "Conflict",
    "IgnoreRules",
    "ProgressEvent",
    "SyncResult",
    "Syncer",
    "confine_remote",
]
