"""The Jupyter Server extension: REST API under `/ranktable/` and the `/ranktable/stream` websocket.

It exposes the services of the other layers (core, jobs, remote, sim); it implements none of them.
"""

from __future__ import annotations

from typing import Any


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    from ranktable.server_ext.app import RanktableApp

    return [{"module": "ranktable.server_ext", "app": RanktableApp}]
