"""JupyterHub for the browser test `tests/hub.spec.ts` (#30): docs/teams.md's Hub in front of one
simulated pool shared by alice, bob and carol (a read-only viewer of alice's server); alice's server is
started and her job `bert` submitted. Prints one JSON line `{"hub"}` and serves until SIGTERM."""

from __future__ import annotations

import asyncio
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ranktable.sim.k8s.rbac import parse_user  # noqa: E402 - after the path
from ranktable.sim.pool import Pool, PoolConfig  # noqa: E402
from tests.integration.hub_helpers import request, spec, start_hub, start_server  # noqa: E402

from serve_stack import announce_and_serve  # noqa: E402 - beside this script


async def main() -> None:
    home = Path(tempfile.mkdtemp(prefix="ranktable-hub-"))
    users = tuple(parse_user(u) for u in ("alice", "bob", "carol:viewer"))
    pool = Pool(PoolConfig(state_dir=home / "sim", nodes=4, leaves=2, tenants=0, users=users)).start()
    try:
        with start_hub(pool.state_dir, home) as hub:
            alice = await start_server(hub, "alice")
            await request(
                "POST", f"{hub.url}/user/alice/ranktable/jobs", {"spec": spec("bert")}, alice, (201,)
            )
            await announce_and_serve({"hub": hub.url})
    finally:
        pool.stop()
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
