"""Users of a shared simulated pool and what each may do: the few RBAC roles a team's pool has.

The pool's own token stays its administrator. `sim start --user alice --user carol:viewer` adds users with
their own bearer tokens (and kubeconfigs): an `editor` reads the whole pool and writes only in its own
namespace (`u-NAME`) and the shared `team` namespace, a `viewer` only reads. Neither holds the
`stop-others` verb (compose.tenancy), so in `team` each stops only their own jobs. Requests and
SelfSubjectAccessReviews are judged by the same rule, answered as a real API server's RBAC authorizer
answers (403 Forbidden naming user, verb, resource).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ranktable.compose.tenancy import safe_name
from ranktable.errors import InputError
from ranktable.sim.k8s import errors

ROLES = ("admin", "editor", "viewer")
TEAM_NAMESPACE = "team"
"""A namespace every editor may write in (created with the users): where the owner label matters."""
READ_VERBS = frozenset({"get", "list", "watch"})
WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})
HTTP_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


@dataclass(frozen=True)
class SimUser:
    name: str
    role: str  # one of ROLES
    namespace: str  # where an editor may write

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "role": self.role, "namespace": self.namespace}


ADMIN = SimUser("pool-admin", "admin", "default")


def verb_of(method: str, has_name: bool, watch: bool) -> str:
    if method in ("GET", "HEAD"):
        return "watch" if watch else ("get" if has_name else "list")
    if method == "DELETE" and not has_name:
        return "deletecollection"
    return HTTP_VERBS.get(method, method.lower())


def allowed(user: SimUser, verb: str, namespace: str | None, resource: str) -> tuple[bool, str]:
    """(allowed, reason) as the RBAC authorizer would give them for this user."""
    if user.role == "admin":
        return True, "the pool's administrator"
    if verb in READ_VERBS and resource not in ("secrets",):
        return True, f"{user.role}s read the whole pool"
    if user.role == "editor" and namespace in (user.namespace, TEAM_NAMESPACE) and verb in WRITE_VERBS:
        return True, f"{user.name} edits namespace {namespace}"
    return False, ""


def forbidden(user: SimUser, verb: str, namespace: str | None, resource: str, group: str) -> errors.ApiError:
    where = f' in the namespace "{namespace}"' if namespace else " at the cluster scope"
    return errors.ApiError(
        403,
        "Forbidden",
        f'{resource}{"." + group if group else ""} is forbidden: User "{user.name}" cannot {verb} resource '
        f'"{resource}" in API group "{group}"{where}',
        {"kind": resource, "group": group},
    )


def review(user: SimUser, spec: dict[str, Any]) -> dict[str, Any]:
    """The status of a SelfSubjectAccessReview (resource attributes; non-resource URLs: read only)."""
    attrs = spec.get("resourceAttributes")
    if isinstance(attrs, dict):
        resource = str(attrs.get("resource") or "")
        if attrs.get("subresource"):
            resource = f"{resource}/{attrs['subresource']}"
        verb = str(attrs.get("verb") or "")
        ok, reason = allowed(user, verb, attrs.get("namespace") or None, resource)
    else:
        verb = str((spec.get("nonResourceAttributes") or {}).get("verb") or "")
        ok, reason = (user.role == "admin" or verb == "get"), "non-resource URLs"
    return {"allowed": ok, "reason": reason} if ok else {"allowed": False}


def parse_user(text: str, where: str = "--user") -> SimUser:
    """`NAME` or `NAME:ROLE` (editor by default); an editor's namespace is `u-NAME`."""
    name, _, role = text.partition(":")
    role = role or "editor"
    if not name or safe_name(name) != name:
        raise InputError(
            f"{text!r}: a user name must be lowercase letters, digits and '-'",
            where=where,
            fix="e.g. --user alice or --user carol:viewer",
        )
    if role not in ROLES:
        raise InputError(f"{text!r}: unknown role {role!r}", where=where, fix=f"one of {', '.join(ROLES)}")
    return SimUser(name, role, f"u-{name}" if role == "editor" else "default")
