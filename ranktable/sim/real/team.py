"""Team members on the real control plane: static tokens and the RBAC a team's pool would have.

`sim start --control-plane real --user alice --user carol:viewer` gives each member a bearer token (the
API server's `--token-auth-file`, group `ranktable-team`) and binds the same roles docs/teams.md shows:
everyone reads the pool (jobs, pods, nodes, queues, namespaces); an editor edits Volcano jobs in its own
namespace `u-NAME` and in the shared `team` namespace. Nobody but the administrator holds `stop-others`,
so the real RBAC authorizer answers the product's SelfSubjectAccessReviews as the simulated one does.
"""

from __future__ import annotations

from typing import Any

from ranktable.sim.k8s.rbac import TEAM_NAMESPACE, SimUser

GROUP = "ranktable-team"
RBAC = "/apis/rbac.authorization.k8s.io/v1"

EDIT_RULES: list[dict[str, Any]] = [
    {
        "apiGroups": ["batch.volcano.sh"],
        "resources": ["jobs"],
        "verbs": ["get", "list", "watch", "create", "delete"],
    },
    {
        "apiGroups": [""],
        "resources": ["configmaps", "pods", "events"],
        "verbs": ["get", "list", "watch", "create", "delete"],
    },
    {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
    {"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["create"]},
]
READ_RULES: list[dict[str, Any]] = [
    {"apiGroups": ["batch.volcano.sh"], "resources": ["jobs"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["scheduling.volcano.sh"], "resources": ["queues"], "verbs": ["get", "list"]},
    {"apiGroups": ["topology.volcano.sh"], "resources": ["hypernodes"], "verbs": ["get", "list"]},
    {
        "apiGroups": [""],
        "resources": ["pods", "nodes", "namespaces", "events"],
        "verbs": ["get", "list", "watch"],
    },
    {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
]


def token_lines(users: tuple[SimUser, ...], tokens: dict[str, str]) -> str:
    """`--token-auth-file` rows: token,user,uid,"groups"."""
    return "".join(f'{tokens[u.name]},{u.name},{u.name},"{GROUP}"\n' for u in users)


def team_objects(users: tuple[SimUser, ...]) -> list[tuple[str, dict[str, Any]]]:
    """(collection path, object) to create once the API server answers, in order."""
    editors = [u for u in users if u.role == "editor"]
    out: list[tuple[str, dict[str, Any]]] = []
    for ns in [*(u.namespace for u in editors), *([TEAM_NAMESPACE] if editors else [])]:
        out.append(
            ("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        )
    for name, rules in (("ranktable-user", EDIT_RULES), ("ranktable-team-reader", READ_RULES)):
        out.append(
            (
                f"{RBAC}/clusterroles",
                {
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "ClusterRole",
                    "metadata": {"name": name},
                    "rules": rules,
                },
            )
        )
    out.append(
        (
            f"{RBAC}/clusterrolebindings",
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": "team-reads-the-pool"},
                "subjects": [{"kind": "Group", "name": GROUP, "apiGroup": "rbac.authorization.k8s.io"}],
                "roleRef": {
                    "kind": "ClusterRole",
                    "name": "ranktable-team-reader",
                    "apiGroup": "rbac.authorization.k8s.io",
                },
            },
        )
    )
    for user in editors:
        for ns in (user.namespace, TEAM_NAMESPACE):
            out.append(
                (
                    f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
                    {
                        "apiVersion": "rbac.authorization.k8s.io/v1",
                        "kind": "RoleBinding",
                        "metadata": {"name": f"{user.name}-edit", "namespace": ns},
                        "subjects": [
                            {"kind": "User", "name": user.name, "apiGroup": "rbac.authorization.k8s.io"}
                        ],
                        "roleRef": {
                            "kind": "ClusterRole",
                            "name": "ranktable-user",
                            "apiGroup": "rbac.authorization.k8s.io",
                        },
                    },
                )
            )
    return out
