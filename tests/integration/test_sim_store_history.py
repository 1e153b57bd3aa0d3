"""The simulated API server's watch history holds each version of an object once (#28).

Stored objects are replaced, never mutated, so an event can share the version it announces; a clone per
event was a second copy of every version the history holds (1,024 pods, each carrying Volcano's 33 KB host
list, kept the simulated pool far above its memory target).
"""

from __future__ import annotations

import gc
import tracemalloc

from ranktable.sim.k8s.resources import CONFIGMAPS
from ranktable.sim.k8s.store import Store

OBJECTS, SIZE = 50, 20_000


def test_the_history_holds_each_version_once_and_hands_out_copies() -> None:
    store = Store(history=1000)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(OBJECTS):
            meta = {"name": f"cm{i}", "namespace": "default"}
            cm = store.create(CONFIGMAPS, {"metadata": meta, "data": {"v": "1" * SIZE}})
            cm["data"]["v"] = "2" * SIZE
            store.update(CONFIGMAPS, cm)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    versions = 2 * OBJECTS  # each object's first and second version, no more
    assert grown < 1.4 * versions * SIZE, f"{grown / (versions * SIZE):.2f} copies of each version"
    events, _ = store.events_since("configmaps", 0)
    assert [e.type for e in events].count("MODIFIED") == OBJECTS
    handed = store.get(CONFIGMAPS, "default", "cm0")  # a copy: changing it changes nothing stored
    handed["data"]["v"] = "changed"
    assert store.get(CONFIGMAPS, "default", "cm0")["data"]["v"] == "2" * SIZE
    assert events[-1].obj["data"]["v"] == "2" * SIZE  # the announced version, unchanged
