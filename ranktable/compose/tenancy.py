"""Who works where on a shared pool: each user's namespace and the owner label their jobs carry.

One pool, many users (a JupyterHub in front): jobs land in a namespace per user unless the deployment says
otherwise, and every job names its owner, so the team's table can say who runs what and the product can
refuse to stop someone else's job. Pure rules only; the cluster adapter asks the API what is allowed.
"""

from __future__ import annotations

import re

from ranktable.compose.k8s_names import DNS1123_LABEL, LABEL_NAME
from ranktable.errors import InputError

OWNER_LABEL = "ranktable.io/owner"
"""The label every submitted job and its rank-table ConfigMap carry: the submitting user (label-safe)."""

CONTEXT_NAMESPACE = "{context}"
"""The namespace setting meaning "the kubeconfig context's namespace" (what `kubectl` uses)."""

USER_FIELD = "{username}"
STOP_OTHERS_VERB = "stop-others"
"""An RBAC verb on `jobs.batch.volcano.sh`: whoever is granted it (or `*`) may stop other users' jobs."""

_UNSAFE = re.compile(r"[^a-z0-9-]+")
_LABEL_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def safe_name(username: str) -> str:
    """A user name as it may appear in a namespace: lowercase, other characters as `-` (`Alice.B` ->
    `alice-b`), at most 63 characters; what JupyterHub's KubeSpawner does with `{username}`."""
    return _UNSAFE.sub("-", username.lower()).strip("-")[:63].strip("-")


def owner_value(username: str) -> str:
    """The owner label's value for a user (label values: 63 characters of [A-Za-z0-9_.-], alnum ends)."""
    value = _LABEL_UNSAFE.sub("-", username)[:63].strip("-_.")
    return value if value and LABEL_NAME.match(value) else "unknown"


def resolve_namespace(
    setting: str, username: str | None, context_namespace: str | None, where: str = "namespace"
) -> str:
    """The namespace a user's jobs go to.

    ``setting``: a fixed namespace (`team-a`), a pattern with `{username}` (`u-{username}`: one per user,
    the user from the Hub or the kubeconfig), or `{context}` / empty: the kubeconfig context's namespace,
    `default` when the context names none. The result must be a DNS-1123 label.
    """
    text = setting.strip()
    if text in ("", CONTEXT_NAMESPACE):
        return context_namespace or "default"
    if USER_FIELD in text:
        if not username:
            raise InputError(
                f"{text!r} needs a user name, and none is known (no JupyterHub user, no kubeconfig user)",
                where=where,
                fix="set JUPYTERHUB_USER, name the user in the kubeconfig, or use a fixed namespace",
            )
        text = text.replace(USER_FIELD, safe_name(username))[:63].rstrip("-")  # a long name: cut
    if "{" in text or "}" in text:
        raise InputError(
            f"{setting!r} has an unknown field; only {USER_FIELD} and {CONTEXT_NAMESPACE} are understood",
            where=where,
            fix="e.g. u-{username}",
        )
    if len(text) > 63 or not DNS1123_LABEL.match(text):
        raise InputError(
            f"{text!r} is not a valid namespace (lowercase letters, digits and '-', at most 63)",
            where=where,
            fix="choose a namespace such as u-{username} or team-a",
        )
    return text


def owner_of(labels: dict[str, str] | None) -> str | None:
    """The owner a job's labels name, or None for a job submitted without one (another tool, or older)."""
    return (labels or {}).get(OWNER_LABEL) or None
