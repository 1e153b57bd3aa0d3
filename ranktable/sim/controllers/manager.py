"""One loop that runs every controller after each change (level-triggered, like informers + workqueues)."""

from __future__ import annotations

import contextlib
import threading
import time
import traceback
from pathlib import Path

from ranktable.sim.controllers import hypernodes
from ranktable.sim.controllers.common import Obj
from ranktable.sim.controllers.configmap1980 import RankTablePlugin, job_uses_plugin
from ranktable.sim.controllers.kubelet import Kubelet
from ranktable.sim.controllers.scheduler import Scheduler
from ranktable.sim.controllers.volcano_job import FINISHED, JobController, job_phase
from ranktable.sim.k8s import errors
from ranktable.sim.k8s.resources import ResourceType
from ranktable.sim.k8s.store import Event, Store

MIN_PASS_SECONDS = 0.03
IDLE_PASS_SECONDS = 0.25
IDLE_PASS_FACTOR = 3  # nothing changed: the next pass waits this many times the last one's length, or more
GC_SECONDS = 2.0  # owners vanish by deletion, which triggers a collection at once; this is a backstop


class ControllerManager:
    def __init__(self, store: Store, kubelet: Kubelet, error_log: Path, ranktable_delay: float = 0.5) -> None:
        self.store = store
        self.kubelet = kubelet
        self.jobs = JobController(store, kubelet)
        self.scheduler = Scheduler(store)
        self.ranktable = RankTablePlugin(store, ranktable_delay)
        self.error_log = error_log
        self._stop = threading.Event()
        self._deleted = threading.Event()
        self._last_gc = 0.0
        # the hypernodes' resolution, kept while no node or hypernode changed (the pass runs 4+ times a
        # second; listing and resolving 1,024 nodes each time was a third of the pool's controller CPU)
        self._resolved: tuple[tuple[int, ...], dict[str, hypernodes.HyperNode]] | None = None
        store.subscribe(self._on_event)
        self._thread = threading.Thread(target=self._loop, name="sim-controllers", daemon=True)

    def _on_event(self, event: Event) -> None:
        if event.type == "DELETED":
            self._deleted.set()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self.store.poke()
        self._thread.join(timeout=5)

    def _loop(self) -> None:
        seen = -1
        took = 0.0
        while not self._stop.is_set():
            # a change is acted on at once; with none, the timed work (backoffs, the rank table's delay)
            # waits a few pass lengths: 1,024 pods made a pass ~0.25 s, and passing every 0.25 s kept the
            # pool's controller thread busy half the time of one of two cores while nothing changed
            seen = self.store.wait(seen, max(IDLE_PASS_SECONDS, IDLE_PASS_FACTOR * took))
            started = time.monotonic()
            try:
                self.pass_once()
            except Exception:  # keep the pool alive; the log says what broke
                with open(self.error_log, "a") as fh:
                    fh.write(traceback.format_exc())
            took = time.monotonic() - started
            time.sleep(MIN_PASS_SECONDS)

    def pass_once(self) -> None:
        for job, pods in self.jobs.sync():
            if job_uses_plugin(job) and job_phase(job) not in FINISHED:
                self.ranktable.sync(job, pods)
        self.scheduler.schedule(self._hypernodes())
        self.kubelet.sync()
        if self._deleted.is_set() or time.monotonic() - self._last_gc > GC_SECONDS:
            self._deleted.clear()
            self._last_gc = time.monotonic()
            self.collect_garbage()

    def _hypernodes(self) -> dict[str, hypernodes.HyperNode]:
        key = self.store.changed_at(hypernodes.HYPERNODES, hypernodes.NODES)  # before: a change meanwhile
        if self._resolved is None or self._resolved[0] != key:  # is seen by the next pass
            self._resolved = (key, hypernodes.sync_status(self.store))
        return self._resolved[1]

    def collect_garbage(self) -> None:
        """Cascading deletion: objects whose owner, namespace or (for pods) node is gone are deleted."""
        objects = self.store.all_objects()
        uids = {o["metadata"].get("uid") for _, o in objects}
        namespaces = {o["metadata"]["name"] for r, o in objects if r.key == "namespaces"}
        nodes = {o["metadata"]["name"] for r, o in objects if r.key == "nodes"}
        for rtype, obj in objects:
            owners = obj["metadata"].get("ownerReferences") or []
            orphan = bool(owners) and all(o.get("uid") not in uids for o in owners)
            lost_node = rtype.key == "pods" and (obj.get("spec") or {}).get("nodeName") not in (None, *nodes)
            if (
                orphan
                or lost_node
                or (rtype.namespaced and obj["metadata"].get("namespace") not in namespaces)
            ):
                self._delete(rtype, obj)  # a pod whose node is gone is evicted (Volcano sees PodEvicted)

    def _delete(self, rtype: ResourceType, obj: Obj) -> None:
        meta = obj["metadata"]
        if rtype.key == "pods":
            if not meta.get("deletionTimestamp"):
                self.kubelet.delete_pod(meta["namespace"], meta["name"])
            return
        with contextlib.suppress(errors.ApiError):
            self.store.delete(rtype, meta.get("namespace"), meta["name"], uid=meta.get("uid"))
