"""Local paths from the browser are relative to the Jupyter root and must stay inside it (else 403)."""

from __future__ import annotations

from pathlib import Path

from ranktable.errors import InputError, NotFoundError, PermissionDenied


def confined(root: str | Path, relative: str, *, field: str) -> Path:
    """`root/relative`, resolved; anything escaping the root (`..`, absolute paths, symlinks) is refused."""
    base = Path(root).resolve()
    text = (relative or "").strip()
    if not text:
        raise InputError("is empty", where=field, fix="give a path relative to the Jupyter root folder")
    if "\0" in text:
        raise InputError(
            "contains a null byte", where=field, fix="give a path relative to the Jupyter root folder"
        )
    try:
        candidate = Path(text).expanduser()
    except RuntimeError:  # `~name` of a user this machine does not have
        raise PermissionDenied(
            f"{text!r} names an unknown user's home folder",
            where=field,
            fix="give a path relative to the Jupyter root folder",
        ) from None
    full = (candidate if candidate.is_absolute() else base / candidate).resolve()
    if full != base and base not in full.parents:  # 403: a well-formed path, but not this user's to name
        raise PermissionDenied(
            f"{text!r} is outside the Jupyter root folder",
            where=field,
            fix="use a path inside the folder JupyterLab shows in its file browser",
        )
    return full


def confined_file(root: str | Path, relative: str, field: str) -> Path:
    """An existing file inside ``root`` (errors name the field, not the server's path)."""
    path = confined(root, relative, field=field)
    try:
        found = path.is_file()
    except OSError as err:  # a name longer than the file system allows, ...: no such file can exist
        raise NotFoundError(
            f"not a usable file name: {err.strerror or err}",
            where=field,
            fix="give a file in the Jupyter root",
        ) from None
    if not found:
        raise NotFoundError(f"no file {relative!r} in the Jupyter root folder", where=field)
    return path
