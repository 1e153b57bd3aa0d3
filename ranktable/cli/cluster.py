"""Which cluster a `ranktable job ...` command talks to: the kubeconfig, else the simulated pool, said aloud.

The cluster adapter never falls back on its own; the CLI chooses the simulated pool only when no
kubeconfig exists at all, and prints one line on stderr saying so and how to use a real pool.
"""

from __future__ import annotations

import sys


def choose_cluster(kubeconfig: str | None, context: str | None) -> tuple[str, str | None]:
    """(kubeconfig, context) to use: the user's, or the simulated pool's (started if not running)."""
    from ranktable.usecases.jobs import configured_kubeconfig

    path = configured_kubeconfig(kubeconfig)
    if path is not None:
        return path, context
    from ranktable.sim.control import find_running, start_background
    from ranktable.sim.paths import default_state_dir

    state_dir = default_state_dir()
    running = find_running(state_dir)
    if running is None:
        print("ranktable: no kubeconfig found; starting the simulated pool ...", file=sys.stderr, flush=True)
        running = start_background(state_dir, [])
    print(
        f"ranktable: using the simulated pool at {running.url} (no --kubeconfig, $KUBECONFIG or "
        "~/.kube/config; pass --kubeconfig to use a real pool)",
        file=sys.stderr,
        flush=True,
    )
    return str(running.kubeconfig), context or running.context
