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


def log_lines(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The lines of a `logs` stream message (`{pods: [{pod, rank, n, ts, text}]}`, stamps and texts joined
    by newlines), one `{pod, rank, ts, text}` each; checks each group holds `n` of both."""
    out = []
    for group in data["pods"]:
        stamps, texts = group["ts"].split("\n"), group["text"].split("\n")
        assert len(stamps) == len(texts) == group["n"] > 0, group
        out += [
            {"pod": group["pod"], "rank": group["rank"], "ts": ts, "text": text}
            for ts, text in zip(stamps, texts, strict=True)
        ]
    return out
