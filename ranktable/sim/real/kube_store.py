"""`ObjectStore` over the official `kubernetes` client, so our controllers run against any API server.

Reads of the watched types come from a cache that one watch per type keeps current (list, then watch from
its resourceVersion, relist on 410 Gone) — an informer in a few lines. Writes go to the API: `mutate` reads
the live object, applies the change and PUTs the main resource and, when the status changed, the `status`
subresource, retrying on 409 Conflict. Errors come back as the Python pool's `ApiError`.
"""

from __future__ import annotations

import contextlib
import copy
import json
import threading
from collections.abc import Callable, Iterable
from typing import Any

from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from ranktable.sim.k8s import errors
from ranktable.sim.k8s.resources import BY_KEY, ResourceType

Obj = dict[str, Any]
CONFLICT_RETRIES = 8
WATCH_SECONDS = 240
REQUEST_TIMEOUT = (5, 30)


def api_error(exc: ApiException) -> errors.ApiError:
    try:
        body = json.loads(exc.body or "{}")
    except ValueError:
        body = {}
    return errors.ApiError(
        int(exc.status or 500), str(body.get("reason") or exc.reason), str(body.get("message") or exc)
    )


def _path(rtype: ResourceType, namespace: str | None, name: str | None = None, sub: str = "") -> str:
    base = f"/apis/{rtype.group}/{rtype.version}" if rtype.group else "/api/v1"
    if rtype.namespaced and namespace:
        base += f"/namespaces/{namespace}"
    base += f"/{rtype.plural}"
    if name:
        base += f"/{name}"
    return base + (f"/{sub}" if sub else "")


class KubeStore:
    """The controllers' view of a real API server (see the module docstring)."""

    @classmethod
    def from_kubeconfig(
        cls, kubeconfig: str | None, context: str | None, watched: Iterable[str] = ()
    ) -> KubeStore:
        """A store on the API server a kubeconfig (and context) names."""
        from kubernetes import config

        configuration = client.Configuration()
        config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=configuration)
        return cls(client.ApiClient(configuration), watched)

    @property
    def host(self) -> str:
        return str(self.api.configuration.host)

    def __init__(self, api: client.ApiClient, watched: Iterable[str] = ()) -> None:
        self.api = api
        self._cond = threading.Condition()
        self._cache: dict[str, dict[tuple[str, str], Obj]] = {}
        self._synced: dict[str, threading.Event] = {}
        self._version = 0
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._watch_loop, args=(BY_KEY[key],), name=f"watch-{key}", daemon=True)
            for key in watched
        ]
        for key in watched:
            self._cache[key] = {}
            self._synced[key] = threading.Event()

    # -- lifecycle --------------------------------------------------------------------------------------
    def start(self, timeout: float = 30.0) -> None:
        for thread in self._threads:
            thread.start()
        for key, synced in self._synced.items():
            if not synced.wait(timeout):
                raise errors.ApiError(504, "Timeout", f"the first list of {key} took over {timeout:.0f}s")

    def stop(self) -> None:
        self._stop.set()
        with self._cond:
            self._cond.notify_all()

    def wait(self, seen: int, timeout: float) -> int:
        """Block until the cache moves past `seen` (or `timeout`); returns the current change count."""
        with self._cond:
            if self._version <= seen:
                self._cond.wait(timeout)
            return self._version

    # -- raw calls ----------------------------------------------------------------------------------------
    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: list[tuple[str, Any]] | None = None,
        raw: bool = False,
    ) -> Any:
        """One request; the decoded JSON reply, or its text when `raw` (e.g. a pod's log)."""
        params = self.api.param_serialize(
            method=method,
            resource_path=path,
            query_params=query or [],
            header_params={"Accept": "application/json", "Content-Type": "application/json"},
            body=body,
            auth_settings=["BearerToken"],
        )
        try:
            resp = self.api.call_api(*params, _request_timeout=REQUEST_TIMEOUT)
            resp.read()
            if not 200 <= resp.status <= 299:
                raise ApiException.from_response(
                    http_resp=resp, body=(resp.data or b"").decode(errors="replace"), data=None
                )
        except ApiException as exc:
            raise api_error(exc) from exc
        if raw:
            return (resp.data or b"").decode(errors="replace")
        return json.loads(resp.data) if resp.data else None

    # -- watch cache ----------------------------------------------------------------------------------------
    def _watch_loop(self, rtype: ResourceType) -> None:
        while not self._stop.is_set():
            try:
                listed = self.call("GET", _path(rtype, None))
                items = {self._ident(rtype, o): self._typed(rtype, o) for o in listed.get("items") or []}
                with self._cond:
                    self._cache[rtype.key] = items
                    self._version += 1
                    self._cond.notify_all()
                self._synced[rtype.key].set()
                self._follow(rtype, str(listed["metadata"]["resourceVersion"]))
            except Exception:
                self._stop.wait(0.5)

    def _follow(self, rtype: ResourceType, rv: str) -> None:
        while not self._stop.is_set():
            stream = watch.Watch()
            for event in stream.stream(
                self._list_function(rtype),
                resource_version=rv,
                timeout_seconds=WATCH_SECONDS,
                allow_watch_bookmarks=True,
                _request_timeout=(5, WATCH_SECONDS + 30),
            ):
                if self._stop.is_set():
                    stream.stop()
                    return
                obj = event["raw_object"]
                if event["type"] == "ERROR":
                    return  # 410 Gone or similar: relist
                rv = obj.get("metadata", {}).get("resourceVersion") or rv
                if event["type"] == "BOOKMARK":
                    continue
                ident = self._ident(rtype, obj)
                with self._cond:
                    if event["type"] == "DELETED":
                        self._cache[rtype.key].pop(ident, None)
                    else:
                        self._cache[rtype.key][ident] = self._typed(rtype, obj)
                    self._version += 1
                    self._cond.notify_all()

    def _list_function(self, rtype: ResourceType) -> Callable[..., Any]:
        if rtype.group:
            custom = client.CustomObjectsApi(self.api)

            def list_custom(**kwargs: Any) -> Any:
                return custom.list_cluster_custom_object(rtype.group, rtype.version, rtype.plural, **kwargs)

            list_custom.__doc__ = custom.list_cluster_custom_object.__doc__
            return list_custom
        core = client.CoreV1Api(self.api)
        name = (
            f"list_{rtype.singular}" if not rtype.namespaced else f"list_{rtype.singular}_for_all_namespaces"
        )
        name = name.replace("configmap", "config_map")
        return getattr(core, name)

    @staticmethod
    def _typed(rtype: ResourceType, obj: Obj) -> Obj:
        obj.setdefault("apiVersion", rtype.api_version)
        obj.setdefault("kind", rtype.kind)
        return obj

    @staticmethod
    def _ident(rtype: ResourceType, obj: Obj) -> tuple[str, str]:
        meta = obj.get("metadata") or {}
        return (meta.get("namespace") or "" if rtype.namespaced else "", meta.get("name", ""))

    # -- ObjectStore ---------------------------------------------------------------------------------------
    def find(self, rtype: ResourceType, namespace: str | None, name: str) -> Obj | None:
        if rtype.key in self._cache:
            with self._cond:
                obj = self._cache[rtype.key].get((namespace or "" if rtype.namespaced else "", name))
                return copy.deepcopy(obj) if obj is not None else None
        return self._get(rtype, namespace, name)

    def _get(self, rtype: ResourceType, namespace: str | None, name: str) -> Obj | None:
        try:
            return self._typed(rtype, self.call("GET", _path(rtype, namespace, name)))
        except errors.ApiError as exc:
            if exc.code == 404:
                return None
            raise

    def list(
        self, rtype: ResourceType, namespace: str | None = None, match: Callable[[Obj], bool] | None = None
    ) -> tuple[list[Obj], int]:
        if rtype.key in self._cache:
            with self._cond:
                items = [copy.deepcopy(o) for _, o in sorted(self._cache[rtype.key].items())]
                version = self._version
        else:
            listed = self.call("GET", _path(rtype, namespace))
            items = [self._typed(rtype, o) for o in listed.get("items") or []]
            version = self._version
        return [
            o
            for o in items
            if (namespace is None or not rtype.namespaced or o["metadata"].get("namespace") == namespace)
            and (match is None or match(o))
        ], version

    def create(self, rtype: ResourceType, obj: Obj) -> Obj:
        body = dict(obj, apiVersion=rtype.api_version, kind=rtype.kind)
        namespace = (obj.get("metadata") or {}).get("namespace")
        return self._typed(rtype, self.call("POST", _path(rtype, namespace), body))

    def write(self, rtype: ResourceType, obj: Obj) -> Obj:
        """PUT the object; its status too when the type has a status subresource and it differs."""
        meta = obj["metadata"]
        live = self._get(rtype, meta.get("namespace"), meta["name"])
        if live is None:
            raise errors.not_found(rtype.plural, rtype.group, meta["name"])
        return self._put(rtype, live, obj)

    def _put(self, rtype: ResourceType, live: Obj, new: Obj) -> Obj:
        meta = new["metadata"]
        namespace, name = meta.get("namespace"), meta["name"]
        body = copy.deepcopy(new)
        body["metadata"]["resourceVersion"] = live["metadata"]["resourceVersion"]
        has_status = "status" in rtype.subresources
        main_changed = {k: v for k, v in body.items() if k != "status"} != {
            k: v for k, v in live.items() if k != "status"
        }
        result = live
        if main_changed or not has_status:
            result = self.call("PUT", _path(rtype, namespace, name), body)
        if has_status and new.get("status") != live.get("status"):
            body["metadata"]["resourceVersion"] = result["metadata"]["resourceVersion"]
            body["status"] = new.get("status") or {}
            result = self.call("PUT", _path(rtype, namespace, name, "status"), body)
        return self._typed(rtype, result)

    def mutate(
        self, rtype: ResourceType, namespace: str | None, name: str, fn: Callable[[Obj], None]
    ) -> Obj | None:
        for _ in range(CONFLICT_RETRIES):
            live = self._get(rtype, namespace, name)
            if live is None:
                return None
            new = copy.deepcopy(live)
            fn(new)
            if new == live:
                return live
            try:
                return self._put(rtype, live, new)
            except errors.ApiError as exc:
                if exc.code == 404:
                    return None
                if exc.code != 409:
                    raise
        raise errors.conflict(rtype.plural, rtype.group, name)

    def delete(self, rtype: ResourceType, namespace: str | None, name: str, uid: str | None = None) -> Obj:
        """Delete at once (grace 0), with a UID precondition when `uid` is given (the kubelet's last step)."""
        options: Obj = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0}
        if uid:
            options["preconditions"] = {"uid": uid}
        result = self.call("DELETE", _path(rtype, namespace, name), options)
        with contextlib.suppress(KeyError, TypeError):
            if result.get("kind") == "Status":
                return {"metadata": {"name": name, "namespace": namespace}}
        return dict(result or {})
