"""Calls to the ranktable REST API through pytest-jupyter's ``jp_fetch``, shared by the server tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


async def call(jp_fetch: Any, *path: str, method: str = "GET", body: Any = None, expect: int = 200) -> Any:
    """One request whose status must be ``expect``; the decoded JSON reply (errors included)."""
    kwargs: dict[str, Any] = {"method": method, "raise_error": False}
    if body is not None:
        kwargs["body"] = json.dumps(body)
    response = await jp_fetch(*path, **kwargs)
    assert response.code == expect, response.body
    return json.loads(response.body)


def extension_without_cluster(tmp_path: Path, **server_app: Any) -> dict[str, Any]:
    """`jp_server_config` for the extension with a private state dir and no cluster configured."""
    return {
        "ServerApp": {"jpserver_extensions": {"ranktable": True}, **server_app},
        "Ranktable": {"state_dir": str(tmp_path / "state"), "kubeconfig": str(tmp_path / "no-kubeconfig")},
    }
