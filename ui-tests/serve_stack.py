"""How a browser stack of ui-tests/ (hosted_stack.py, hub_stack.py) hands itself to `withStack` in
tests/fixtures.ts: one JSON line on stdout saying where it serves, then serving until SIGTERM (or SIGINT)."""

from __future__ import annotations

import asyncio
import json
import signal


async def announce_and_serve(where: dict[str, str]) -> None:
    """Print `where` as the first stdout line, then wait for SIGTERM or SIGINT."""
    print(json.dumps(where), flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
