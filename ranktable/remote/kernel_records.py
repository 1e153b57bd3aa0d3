"""What a Jupyter server needs to find its remote kernels again after a restart, one file per kernel.

``RANKTABLE_HOME/remote-kernels/<kernel_id>.json`` (mode 600 in a 700 folder: it holds the kernel's
HMAC key, like Jupyter's own connection files): the kernel name, the local connection info and the
provisioner's info (profile, remote pid and ports, files, and how far the IOPub log was delivered).
Written at launch, updated as output is delivered, removed when the kernel is shut down.
"""

from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path
from typing import Any

from ranktable.home import ranktable_home
from ranktable.remote.state import write_private_json

KERNEL_ID = re.compile(r"^[A-Za-z0-9-]{1,64}$")


class KernelRecords:
    def __init__(self, home: Path | None = None) -> None:
        self.directory = (home or ranktable_home()) / "remote-kernels"

    def _path(self, kernel_id: str) -> Path:
        if not KERNEL_ID.match(kernel_id):
            raise ValueError(f"invalid kernel id {kernel_id!r}")
        return self.directory / f"{kernel_id}.json"

    def save(self, kernel_id: str, record: dict[str, Any]) -> None:
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_private_json(self._path(kernel_id), {"kernel_id": kernel_id, **record})

    def update(self, kernel_id: str, **provisioner: Any) -> None:
        """Merge fields into the record's provisioner info (no-op if the record is gone)."""
        record = self.load(kernel_id)
        if record is not None:
            record.setdefault("provisioner", {}).update(provisioner)
            self.save(kernel_id, record)

    def load(self, kernel_id: str) -> dict[str, Any] | None:
        try:
            data = json.loads(self._path(kernel_id).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def all(self) -> list[dict[str, Any]]:
        if not self.directory.is_dir():
            return []
        found = []
        for path in sorted(self.directory.glob("*.json")):
            record = self.load(path.stem) if KERNEL_ID.match(path.stem) else None
            if record is not None:
                found.append(record)
        return found

    def remove(self, kernel_id: str) -> None:
        with contextlib.suppress(FileNotFoundError, ValueError):
            self._path(kernel_id).unlink()
