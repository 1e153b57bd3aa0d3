"""Discovery documents (`/api`, `/apis`, resource lists) in the legacy form every kubectl understands.

kubectl 1.32 first asks for aggregated discovery (`as=APIGroupDiscoveryList`); answering with plain
`application/json` makes it fall back to these per-group documents, which is what older servers do.
"""

from __future__ import annotations

from typing import Any

from ranktable.sim.k8s.resources import RESOURCES, ResourceType, groups, resources_of

SERVER_VERSION = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.4+ranktable-sim",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.23.6",
    "compiler": "gc",
    "platform": "linux/amd64",
}


def _verbs(r: ResourceType) -> list[str]:
    return list(r.verbs)


def api_versions(server_address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def _group(name: str) -> dict[str, Any]:
    version = next(r.version for r in RESOURCES if r.group == name)
    gv = {"groupVersion": f"{name}/{version}", "version": version}
    return {"name": name, "versions": [gv], "preferredVersion": gv}


def api_group_list() -> dict[str, Any]:
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [_group(g) for g in groups()]}


def api_group(name: str) -> dict[str, Any] | None:
    if name not in groups():
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(name)}


def resource_list(group_version: str) -> dict[str, Any] | None:
    found = resources_of(group_version)
    if not found:
        return None
    entries: list[dict[str, Any]] = []
    for r in found:
        entry: dict[str, Any] = {
            "name": r.plural,
            "singularName": r.singular,
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": _verbs(r),
            "storageVersionHash": r.kind.lower()[:8],
        }
        if r.short_names:
            entry["shortNames"] = list(r.short_names)
        if r.categories:
            entry["categories"] = list(r.categories)
        entries.append(entry)
        for sub in r.subresources:
            verbs = {"log": ["get"], "exec": ["create", "get"]}.get(sub, ["get", "patch", "update"])
            entries.append(
                {
                    "name": f"{r.plural}/{sub}",
                    "singularName": "",
                    "namespaced": r.namespaced,
                    "kind": "Pod" if sub == "log" else r.kind,
                    "verbs": verbs,
                }
            )
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": entries,
    }
