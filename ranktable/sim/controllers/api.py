"""What our controllers need from an API server, so the same code runs on the Python pool and a real one.

`Store` (the Python pool's object store) has these methods natively; `ranktable.sim.real.kube_store`
implements them over the official `kubernetes` client (watch-fed cache for reads, API calls for writes).
Failures are `ranktable.sim.k8s.errors.ApiError` on both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from ranktable.sim.k8s.resources import ResourceType

Obj = dict[str, Any]


class ObjectStore(Protocol):
    def find(self, rtype: ResourceType, namespace: str | None, name: str) -> Obj | None: ...

    def list(
        self, rtype: ResourceType, namespace: str | None = None, match: Callable[[Obj], bool] | None = None
    ) -> tuple[list[Obj], int]: ...

    def create(self, rtype: ResourceType, obj: Obj) -> Obj: ...

    def write(self, rtype: ResourceType, obj: Obj) -> Obj: ...

    def mutate(
        self, rtype: ResourceType, namespace: str | None, name: str, fn: Callable[[Obj], None]
    ) -> Obj | None: ...

    def delete(
        self, rtype: ResourceType, namespace: str | None, name: str, uid: str | None = None
    ) -> Obj: ...
