"""The few Kubernetes API calls the product makes, as plain REST requests through `transport.Transport`.

Why not the generated `CoreV1Api` and `CustomObjectsApi`: in kubernetes 37 importing them imports every model
they name (~250 pydantic classes) and the package's client (#28), while every call here reads the raw JSON.
The methods keep the generated ones' names, positional arguments and keyword arguments, and behave as their
legacy-options path does: a non-2xx answer raises `ApiException`; `_preload_content=False` returns the
urllib3 response, else the decoded JSON body.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from ranktable.cluster.transport import Transport

QUERY_NAMES = {  # the generated methods' keyword arguments -> the API's query parameters
    "label_selector": "labelSelector",
    "field_selector": "fieldSelector",
    "resource_version": "resourceVersion",
    "timeout_seconds": "timeoutSeconds",
    "allow_watch_bookmarks": "allowWatchBookmarks",
    "watch": "watch",
    "limit": "limit",
    "_continue": "continue",
    "propagation_policy": "propagationPolicy",
}


def _segment(value: str) -> str:
    return quote(str(value), safe="")


class _Rest:
    def __init__(self, transport: Transport) -> None:
        self.transport = transport

    def _request(
        self,
        method: str,
        path: str,
        body: Any = None,
        _preload_content: bool = True,
        _request_timeout: Any = None,
        **options: Any,
    ) -> Any:
        query: list[tuple[str, Any]] = []
        for name, value in options.items():
            if name not in QUERY_NAMES:
                raise TypeError(f"unexpected keyword argument {name!r}")
            if value is not None:
                query.append((QUERY_NAMES[name], str(value).lower() if isinstance(value, bool) else value))
        headers = {"Accept": "application/json"}
        resp = self.transport.request(
            method, path, query, headers, body, _request_timeout, preload=_preload_content
        )
        if not _preload_content:
            return resp
        data = resp.data
        return json.loads(data) if data else None


class CoreApi(_Rest):
    """The `core/v1` calls used (pods, events, nodes, ConfigMaps)."""

    def list_namespaced_pod(self, namespace: str, **kw: Any) -> Any:
        return self._request("GET", f"/api/v1/namespaces/{_segment(namespace)}/pods", **kw)

    def read_namespaced_pod(self, name: str, namespace: str, **kw: Any) -> Any:
        return self._request("GET", f"/api/v1/namespaces/{_segment(namespace)}/pods/{_segment(name)}", **kw)

    def list_pod_for_all_namespaces(self, **kw: Any) -> Any:
        return self._request("GET", "/api/v1/pods", **kw)

    def list_namespaced_event(self, namespace: str, **kw: Any) -> Any:
        return self._request("GET", f"/api/v1/namespaces/{_segment(namespace)}/events", **kw)

    def list_node(self, **kw: Any) -> Any:
        return self._request("GET", "/api/v1/nodes", **kw)

    def list_namespaced_config_map(self, namespace: str, **kw: Any) -> Any:
        return self._request("GET", f"/api/v1/namespaces/{_segment(namespace)}/configmaps", **kw)

    def read_namespaced_config_map(self, name: str, namespace: str, **kw: Any) -> Any:
        path = f"/api/v1/namespaces/{_segment(namespace)}/configmaps/{_segment(name)}"
        return self._request("GET", path, **kw)

    def create_namespaced_config_map(self, namespace: str, body: Any, **kw: Any) -> Any:
        path = f"/api/v1/namespaces/{_segment(namespace)}/configmaps"
        return self._request("POST", path, body=body, **kw)

    def delete_namespaced_config_map(self, name: str, namespace: str, **kw: Any) -> Any:
        path = f"/api/v1/namespaces/{_segment(namespace)}/configmaps/{_segment(name)}"
        return self._request("DELETE", path, **kw)

    def read_namespace(self, name: str, **kw: Any) -> Any:
        return self._request("GET", f"/api/v1/namespaces/{_segment(name)}", **kw)

    def create_namespace(self, body: Any, **kw: Any) -> Any:
        return self._request("POST", "/api/v1/namespaces", body=body, **kw)

    def create_self_subject_access_review(self, body: Any, **kw: Any) -> Any:
        """`kubectl auth can-i` (authorization.k8s.io/v1, kept here with the other few calls)."""
        return self._request(
            "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body=body, **kw
        )


class CustomObjects(_Rest):
    """Custom resources (Volcano Jobs, HyperNodes, PodGroups) by group, version and plural."""

    def list_namespaced_custom_object(
        self, group: str, version: str, namespace: str, plural: str, **kw: Any
    ) -> Any:
        return self._request("GET", self._path(group, version, plural, namespace), **kw)

    def list_cluster_custom_object(self, group: str, version: str, plural: str, **kw: Any) -> Any:
        return self._request("GET", self._path(group, version, plural), **kw)

    def get_namespaced_custom_object(
        self, group: str, version: str, namespace: str, plural: str, name: str, **kw: Any
    ) -> Any:
        return self._request("GET", self._path(group, version, plural, namespace, name), **kw)

    def get_cluster_custom_object(self, group: str, version: str, plural: str, name: str, **kw: Any) -> Any:
        return self._request("GET", self._path(group, version, plural, None, name), **kw)

    def create_namespaced_custom_object(
        self, group: str, version: str, namespace: str, plural: str, body: Any, **kw: Any
    ) -> Any:
        return self._request("POST", self._path(group, version, plural, namespace), body=body, **kw)

    def delete_namespaced_custom_object(
        self, group: str, version: str, namespace: str, plural: str, name: str, **kw: Any
    ) -> Any:
        return self._request("DELETE", self._path(group, version, plural, namespace, name), **kw)

    @staticmethod
    def _path(group: str, version: str, plural: str, namespace: str | None = None, name: str = "") -> str:
        path = f"/apis/{_segment(group)}/{_segment(version)}"
        if namespace is not None:
            path += f"/namespaces/{_segment(namespace)}"
        path += f"/{_segment(plural)}"
        return f"{path}/{_segment(name)}" if name else path
