"""What this user may do on the pool, asked of the API server (SelfSubjectAccessReview), and who they are.

A shared pool answers for its RBAC: the product never guesses. The panel shows these answers (disabled
buttons with the reason), the use cases refuse early with the same words, and the API server still has
the last say on every request.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ranktable.cluster.kube import Kube, resolve_kubeconfig
from ranktable.compose.tenancy import STOP_OTHERS_VERB
from ranktable.errors import NotFoundError, PermissionDenied, RanktableError

CHECKS: dict[str, tuple[str, str, str, str]] = {
    # action: (verb, group, resource, subresource) in the user's namespace
    "list": ("list", "batch.volcano.sh", "jobs", ""),
    "submit": ("create", "batch.volcano.sh", "jobs", ""),
    "stop": ("delete", "batch.volcano.sh", "jobs", ""),
    "stop_others": (STOP_OTHERS_VERB, "batch.volcano.sh", "jobs", ""),
    "logs": ("get", "", "pods", "log"),
    "exec": ("create", "", "pods", "exec"),
}


@dataclass(frozen=True)
class Identity:
    """Who the kubeconfig's current context says the user is, and the namespace it works in."""

    user: str | None
    namespace: str | None


def kubeconfig_identity(kubeconfig: str | None, context: str | None) -> Identity:
    """The context's user entry name and namespace (None where the file or context names none)."""
    path = resolve_kubeconfig(kubeconfig)
    if path is None or not Path(path).is_file():
        return Identity(None, None)
    try:
        data = yaml.safe_load(Path(path).read_text()) or {}
    except (OSError, yaml.YAMLError):
        return Identity(None, None)
    name = context or data.get("current-context")
    for entry in data.get("contexts") or []:
        if isinstance(entry, dict) and entry.get("name") == name:
            ctx = entry.get("context") or {}
            return Identity(ctx.get("user") or None, ctx.get("namespace") or None)
    return Identity(None, None)


def can_i(kube: Kube, verb: str, group: str, resource: str, namespace: str, subresource: str = "") -> bool:
    """`kubectl auth can-i VERB RESOURCE -n NAMESPACE`, answered by the API server."""
    attrs: dict[str, Any] = {"verb": verb, "group": group, "resource": resource, "namespace": namespace}
    if subresource:
        attrs["subresource"] = subresource
    body = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": attrs},
    }
    got = kube.call(kube.core.create_self_subject_access_review, body, what="SelfSubjectAccessReview")
    return bool((got.get("status") or {}).get("allowed"))


def permissions(kube: Kube, namespace: str) -> dict[str, bool]:
    """Every action of `CHECKS` in `namespace`: allowed or not (reviews sent side by side)."""
    with ThreadPoolExecutor(max_workers=len(CHECKS)) as pool:
        answers = {
            action: pool.submit(can_i, kube, verb, group, resource, namespace, sub)
            for action, (verb, group, resource, sub) in CHECKS.items()
        }
        return {action: future.result() for action, future in answers.items()}


def namespace_exists(kube: Kube, namespace: str) -> bool | None:
    """True / False, or None when this user may not read namespaces (then the API's answer will say)."""
    try:
        kube.call(kube.core.read_namespace, namespace, what=f"namespace {namespace}")
    except NotFoundError:
        return False
    except PermissionDenied:
        return None
    return True


def ensure_namespace(kube: Kube, namespace: str) -> bool:
    """Create the user's namespace when it is missing and RBAC allows it; True when it was created.

    Missing and not creatable: a NotFoundError saying so and who can fix it (not "ConfigMap ... not found").
    """
    if namespace_exists(kube, namespace) is not False:
        return False
    if can_i(kube, "create", "", "namespaces", ""):
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
        try:
            kube.call(kube.core.create_namespace, body, what=f"namespace {namespace}")
        except RanktableError as exc:
            if "already exists" not in exc.message:
                raise
        return True
    raise NotFoundError(
        f"namespace {namespace} does not exist and you may not create it",
        where="namespace",
        fix=f"ask the pool's admin to create it (`kubectl create namespace {namespace}`) and give you a "
        "role in it, or choose a namespace you may use (-n / c.Ranktable.namespace)",
    )
