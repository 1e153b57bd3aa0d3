"""Kubernetes `Status` errors, so clients see the same codes and reasons as from a real API server."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """An API failure carried to the HTTP layer and written as a `Status` object."""

    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            body["details"] = self.details
        return body


def resource_label(kind_group: str, name: str) -> str:
    """`pods "x"` / `jobs.batch.volcano.sh "x"` as the API server words it."""
    return f'{kind_group} "{name}"'


def _object_error(code: int, reason: str, template: str, plural: str, group: str, name: str) -> ApiError:
    """An error about one object; ``{resource}`` in ``template`` is the object as the API server names it."""
    qualified = f"{plural}.{group}" if group else plural
    message = template.format(resource=resource_label(qualified, name))
    return ApiError(code, reason, message, {"name": name, "group": group, "kind": plural})


def not_found(plural: str, group: str, name: str) -> ApiError:
    return _object_error(404, "NotFound", "{resource} not found", plural, group, name)


def already_exists(plural: str, group: str, name: str) -> ApiError:
    return _object_error(409, "AlreadyExists", "{resource} already exists", plural, group, name)


def conflict(plural: str, group: str, name: str) -> ApiError:
    template = (
        "Operation cannot be fulfilled on {resource}: the object has been modified; "
        "please apply your changes to the latest version and try again"
    )
    return _object_error(409, "Conflict", template, plural, group, name)


def invalid(kind: str, group: str, name: str, causes: list[tuple[str, str]]) -> ApiError:
    """422 Invalid with one cause per (field, message), worded like apimachinery's field errors."""
    qualified = f"{kind}.{group}" if group else kind
    text = "; ".join(f"{field}: {msg}" for field, msg in causes)
    if len(causes) > 1:
        text = "[" + ", ".join(f"{field}: {msg}" for field, msg in causes) + "]"
    return ApiError(
        422,
        "Invalid",
        f"{resource_label(qualified, name)} is invalid: {text}",
        {
            "name": name,
            "group": group,
            "kind": kind,
            "causes": [
                {"reason": "FieldValueInvalid", "message": msg, "field": field} for field, msg in causes
            ],
        },
    )


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def gone(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def unsupported_media_type(content_type: str) -> ApiError:
    return ApiError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - "
        f"accepted media types include: application/json-patch+json, application/merge-patch+json, "
        f"application/apply-patch+yaml (got {content_type})",
    )


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


def method_not_allowed(
    message: str = "the server does not allow this method on the requested resource",
) -> ApiError:
    return ApiError(405, "MethodNotAllowed", message)
