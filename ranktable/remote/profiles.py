"""Connection profiles: what to connect to and how to sync, stored as JSON under ``RANKTABLE_HOME``.

A profile never holds a password or passphrase (a passphrase is asked for and kept in memory only).
Values left unset are filled from ``~/.ssh/config`` (HostName, User, Port, IdentityFile, ProxyJump) at
connect time, so users keep one source of truth for their hosts.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import paramiko

from ranktable.compose.storage import SharedStorage
from ranktable.errors import ConflictError, ContentError, InputError, NotFoundError
from ranktable.home import ranktable_home
from ranktable.remote.localuser import local_user_name
from ranktable.remote.state import write_private_json

NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
# Host names, IPv4/IPv6 addresses (brackets allowed) and ~/.ssh/config aliases; 253 is DNS's limit.
HOST_RE = re.compile(r"^[A-Za-z0-9._:%\[\]-]{1,253}$")
USER_RE = re.compile(r"^[A-Za-z0-9._][A-Za-z0-9._$-]{0,63}$")
MAX_PATH = 4096  # PATH_MAX: key files and remote directories
MAX_IGNORE_PATTERNS = 1000
MAX_IGNORE_PATTERN = 1024
UPLOAD_MODES = ("always", "explicit", "never")
DEFAULT_USER = "ma-user"  # Notebook instances log in as ma-user
DEFAULT_REMOTE_DIR = "~/work"


def validate_name(name: str, *, what: str = "profile name") -> str:
    if not NAME_RE.match(name or ""):
        raise InputError(
            f"invalid {what} {name!r}",
            where=what,
            fix="use letters, digits, '_' and '-', start with a letter, at most 64 characters",
        )
    return name


def _text(value: object, where: str, *, limit: int = MAX_PATH, what: str = "a string") -> str:
    """``value`` as a clean string: right type, valid UTF-8 (no lone surrogates), no control characters."""
    if not isinstance(value, str):
        raise InputError(
            f"must be {what}, not {type(value).__name__} {value!r:.60}", where=where, fix=f"give {what}"
        )
    if len(value) > limit:
        raise InputError(f"is {len(value)} characters long (limit {limit})", where=where, fix="shorten it")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(
            f"is not valid text ({exc.reason} at position {exc.start})",
            where=where,
            fix="retype it without invalid characters",
        ) from exc
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise InputError("contains control characters", where=where, fix="remove them (tabs, newlines, NUL)")
    return value


def _optional_text(value: object, where: str, **kw: Any) -> str | None:
    return None if value is None else _text(value, where, **kw)


def _integer(value: object, where: str, low: int, high: int, fix: str) -> int:
    if isinstance(value, float) and value.is_integer():  # JSON Schema's integer: 22.0 is one
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise InputError(
            f"must be a whole number {low}-{high}, not {type(value).__name__} {value!r:.40}",
            where=where,
            fix=fix,
        )
    if not low <= value <= high:
        raise InputError(f"{value} is out of range {low}-{high}", where=where, fix=fix)
    return value


@dataclass(frozen=True)
class SyncSettings:
    """How a local folder is mirrored to the remote root."""

    upload: str = "explicit"  # always | explicit | never (automatic upload mode)
    delete_remote: bool = False  # delete remote files we uploaded once they are deleted locally
    ignore: tuple[str, ...] = ()  # extra gitignore-style patterns

    def __post_init__(self) -> None:
        if not isinstance(self.upload, str) or self.upload not in UPLOAD_MODES:
            raise InputError(
                f"unknown upload mode {self.upload!r:.40}",
                where="sync.upload",
                fix=f"use one of {', '.join(UPLOAD_MODES)}",
            )
        if not isinstance(self.delete_remote, bool):
            raise InputError(
                f"must be true or false, not {self.delete_remote!r:.40}", where="sync.delete_remote"
            )
        if not isinstance(self.ignore, tuple | list):  # a string would be split into characters
            raise InputError(
                f"must be a list of patterns, not {type(self.ignore).__name__} {self.ignore!r:.60}",
                where="sync.ignore",
                fix='give a list, e.g. ["*.ckpt", "data/"]',
            )
        if len(self.ignore) > MAX_IGNORE_PATTERNS:
            raise InputError(
                f"has {len(self.ignore)} patterns (limit {MAX_IGNORE_PATTERNS})",
                where="sync.ignore",
                fix="put long lists in a .ranktableignore file in the synced folder",
            )
        for index, pattern in enumerate(self.ignore):
            _text(pattern, f"sync.ignore[{index}]", limit=MAX_IGNORE_PATTERN, what="a gitignore pattern")
        object.__setattr__(self, "ignore", tuple(self.ignore))


@dataclass(frozen=True)
class Profile:
    name: str
    host: str
    port: int | None = None
    user: str | None = None
    key_file: str | None = None
    jump: str | None = None  # name of another profile used as ProxyJump
    remote_dir: str = DEFAULT_REMOTE_DIR
    sync: SyncSettings = field(default_factory=SyncSettings)
    max_channels: int = 8
    # the instance folder on storage the jobs' pods mount too (SFS Turbo, OBS, a PVC), and that volume
    shared: SharedStorage | None = None

    def __post_init__(self) -> None:
        validate_name(_text(self.name, "name", limit=64))
        if not HOST_RE.match(_text(self.host, "host", limit=253)):
            raise InputError(
                f"invalid host {self.host!r}",
                where="host",
                fix="give a host name, an IP address or a ~/.ssh/config Host alias (letters, digits, .-:[])",
            )
        if self.port is not None:
            object.__setattr__(self, "port", _integer(self.port, "port", 1, 65535, "use 1-65535 (SSH is 22)"))
        if self.user is not None and not USER_RE.match(_text(self.user, "user", limit=64)):
            raise InputError(
                f"invalid user name {self.user!r}", where="user", fix="Notebook instances use ma-user"
            )
        _optional_text(self.key_file, "key_file")
        if self.jump is not None:
            validate_name(_text(self.jump, "jump", limit=64), what="jump profile name")
            if self.jump == self.name:
                raise ContentError(
                    "a profile cannot jump through itself", where="jump", fix="name another profile"
                )
        channels = _integer(
            self.max_channels,
            "max_channels",
            1,
            64,
            "use 1-64 (Notebook instances allow at most 10 SSH sessions)",
        )
        object.__setattr__(self, "max_channels", channels)
        if not _text(self.remote_dir, "remote_dir"):
            raise InputError("empty remote directory", where="remote_dir", fix="give e.g. /home/ma-user/work")
        if not isinstance(self.sync, SyncSettings):
            raise InputError("must be an object", where="sync", fix='e.g. {"upload": "explicit"}')
        if self.shared is not None and not isinstance(self.shared, SharedStorage):
            object.__setattr__(self, "shared", SharedStorage.from_json(self.shared))

    @property
    def working_dir(self) -> str:
        """Where sync, automatic upload, `ranktable run` and remote kernels work: `remote_dir` when it was
        given, else the shared folder (where jobs see what is synced), else ~/work."""
        if self.shared is not None and self.remote_dir == DEFAULT_REMOTE_DIR:
            return self.shared.instance_path
        return self.remote_dir

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["sync"]["ignore"] = list(self.sync.ignore)
        data["shared"] = None if self.shared is None else self.shared.to_json()
        return data

    @classmethod
    def from_json(cls, data: object, *, where: str = "profile") -> Profile:
        """A profile from stored or posted JSON; any wrong field is an ``InputError`` naming it."""
        if not isinstance(data, dict):
            raise InputError(f"must be an object, not {type(data).__name__}", where=where)
        sync = data.get("sync")
        if sync is None:
            sync = {}
        if not isinstance(sync, dict):
            raise InputError(
                f"must be an object, not {type(sync).__name__}", where=f"{where}: sync" if where else "sync"
            )
        known_sync = {f.name for f in dataclasses.fields(SyncSettings)}
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(
            {*(k for k in data if k not in known), *(f"sync.{k}" for k in sync if k not in known_sync)}
        )
        if unknown:
            raise InputError(
                f"unknown field(s) {', '.join(map(str, unknown))}",
                where=f"{where}: {unknown[0]}" if where else str(unknown[0]),
                fix=f"use only {', '.join(sorted(known))}",
            )
        try:
            fields = {k: v for k, v in data.items() if k != "sync"}
            return cls(**fields, sync=SyncSettings(**sync))
        except TypeError as exc:  # a required field is missing
            raise InputError(
                f"malformed profile: {exc}", where=where, fix="re-create it with `ranktable ssh add`"
            ) from exc
        except InputError as exc:
            exc.where = f"{where}: {exc.where}" if where and exc.where else (exc.where or where or None)
            raise


@dataclass(frozen=True)
class Endpoint:
    """A profile resolved against ~/.ssh/config: everything needed to open the TCP connection and log in."""

    profile: str
    host: str  # what we connect to (HostName)
    alias: str  # what the user typed (Host)
    port: int
    user: str
    key_file: str | None
    jump: Endpoint | None
    remote_dir: str

    @property
    def host_id(self) -> str:
        """The known_hosts key: ``host`` for port 22, ``[host]:port`` otherwise."""
        return self.host if self.port == 22 else f"[{self.host}]:{self.port}"


def _ssh_config(path: Path | None = None) -> paramiko.SSHConfig:
    local_user_name()  # paramiko's lookups ask getpass, which fails for a UID without a passwd entry
    path = path or Path(os.environ.get("RANKTABLE_SSH_CONFIG", "~/.ssh/config")).expanduser()
    if path.is_file():
        return paramiko.SSHConfig.from_path(str(path))
    return paramiko.SSHConfig()


def _parse_jump_spec(spec: str) -> tuple[str | None, str, int | None]:
    """``[user@]host[:port]`` as in ProxyJump."""
    user = None
    if "@" in spec:
        user, spec = spec.rsplit("@", 1)
    port = None
    if spec.startswith("[") and "]" in spec:
        host, _, rest = spec[1:].partition("]")
        if rest.startswith(":"):
            port = int(rest[1:])
    elif spec.count(":") == 1:
        host, port_s = spec.split(":")
        port = int(port_s)
    else:
        host = spec
    return user, host, port


class ProfileStore:
    """Profiles in ``RANKTABLE_HOME/profiles.json`` (mode 600)."""

    def __init__(self, home: Path | None = None, ssh_config: Path | None = None) -> None:
        self.home = home or ranktable_home()
        self.path = self.home / "profiles.json"
        self.ssh_config_path = ssh_config

    def _read(self) -> tuple[dict[str, Profile], dict[str, tuple[Any, InputError]]]:
        """Valid profiles, and the stored entries that are not (kept verbatim, with why)."""
        if not self.path.exists():
            return {}, {}
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            raise InputError(
                f"not valid JSON: {exc}", where=str(self.path), fix="fix or delete the file"
            ) from exc
        stored = raw.get("profiles") if isinstance(raw, dict) else None
        if not isinstance(stored, dict):
            raise InputError('has no "profiles" object', where=str(self.path), fix="fix or delete the file")
        good: dict[str, Profile] = {}
        bad: dict[str, tuple[Any, InputError]] = {}
        for name, data in stored.items():
            try:
                profile = Profile.from_json(data, where="")
                if profile.name != name:
                    raise InputError(f"is stored under the name {name!r}", where="name")
                good[name] = profile
            except InputError as exc:
                bad[name] = (data, exc)
        return good, bad

    def _load(self) -> dict[str, Profile]:
        return self._read()[0]

    def _save(self, profiles: dict[str, Profile]) -> None:
        """Write valid profiles; invalid stored ones are kept as they were (never silently dropped)."""
        _, bad = self._read()
        data: dict[str, Any] = {name: raw for name, (raw, _) in bad.items() if name not in profiles}
        data.update({n: p.to_json() for n, p in profiles.items()})
        write_private_json(self.path, {"version": 1, "profiles": dict(sorted(data.items()))})

    def list_profiles(self) -> list[Profile]:
        """The valid profiles (a damaged entry never hides the others; see ``invalid_profiles``)."""
        return list(self._load().values())

    def invalid_profiles(self) -> dict[str, InputError]:
        """Stored entries that fail validation, by name, with the reason (fix or remove them)."""
        return {name: exc for name, (_, exc) in self._read()[1].items()}

    def get(self, name: str) -> Profile:
        profiles, bad = self._read()
        if name in bad:
            exc = bad[name][1]
            raise InputError(
                f"the stored profile {name!r} is invalid: {exc.message}",
                where=str(self.path),
                fix=f"re-create it: `ranktable ssh remove {name}` then `ranktable ssh add {name} ...`",
            )
        if name not in profiles:
            known = ", ".join(sorted(profiles)) or "none yet"
            raise NotFoundError(
                f"no SSH profile named {name!r} (known: {known})",
                where="profile",
                fix=f"add it with `ranktable ssh add {name} --host HOST`",
            )
        return profiles[name]

    def add(self, profile: Profile, *, replace_existing: bool = False) -> Profile:
        profiles = self._load()
        if profile.name in profiles and not replace_existing:
            raise ConflictError(
                f"an SSH profile named {profile.name!r} already exists",
                where="profile",
                fix=f"remove it first (`ranktable ssh remove {profile.name}`) or pick another name",
            )
        if profile.jump is not None and profile.jump not in profiles:  # a reference, not the resource: 422
            raise ContentError(
                f"jump profile {profile.jump!r} does not exist",
                where="jump",
                fix=f"add it first with `ranktable ssh add {profile.jump} --host HOST`",
            )
        if profile.key_file:
            profile = replace(profile, key_file=str(Path(profile.key_file).expanduser().resolve()))
        profiles[profile.name] = profile
        self._save(profiles)
        return profile

    def remove(self, name: str) -> None:
        profiles, bad = self._read()
        if name in bad:  # removing is how a damaged entry is fixed
            stored = {n: p.to_json() for n, p in profiles.items()}
            stored.update({n: raw for n, (raw, _) in bad.items() if n != name})
            write_private_json(self.path, {"version": 1, "profiles": dict(sorted(stored.items()))})
            return
        self.get(name)
        users = [p.name for p in profiles.values() if p.jump == name]
        if users:
            raise ConflictError(
                f"profile {name!r} is the jump host of {', '.join(users)}",
                where="profile",
                fix="remove or change those profiles first",
            )
        del profiles[name]
        self._save(profiles)

    def resolve(self, name: str, *, _seen: tuple[str, ...] = ()) -> Endpoint:
        """The profile completed with ~/.ssh/config values (profile values win)."""
        if name in _seen:
            raise InputError(f"jump loop: {' -> '.join((*_seen, name))}", where="jump", fix="break the loop")
        profile = self.get(name)
        conf = _ssh_config(self.ssh_config_path).lookup(profile.host)
        jump: Endpoint | None = None
        if profile.jump:
            jump = self.resolve(profile.jump, _seen=(*_seen, name))
        elif conf.get("proxyjump") and conf["proxyjump"].lower() != "none":
            jump = self._resolve_spec(conf["proxyjump"].split(",")[0].strip(), depth=len(_seen) + 1)
        key = profile.key_file or (conf.get("identityfile") or [None])[0]
        return Endpoint(
            profile=profile.name,
            host=conf.get("hostname", profile.host),
            alias=profile.host,
            port=profile.port or int(conf.get("port", 22)),
            user=profile.user or conf.get("user") or DEFAULT_USER,
            key_file=str(Path(key).expanduser()) if key else None,
            jump=jump,
            remote_dir=profile.working_dir,
        )

    def _resolve_spec(self, spec: str, *, depth: int) -> Endpoint:
        """A ProxyJump value from ~/.ssh/config: an existing profile name, or ``[user@]host[:port]``."""
        if depth > 5:
            raise InputError("ProxyJump chain too long", where="~/.ssh/config", fix="use at most 5 hops")
        if NAME_RE.match(spec) and spec in self._load():
            return self.resolve(spec)
        user, host, port = _parse_jump_spec(spec)
        conf = _ssh_config(self.ssh_config_path).lookup(host)
        jump = None
        if conf.get("proxyjump") and conf["proxyjump"].lower() != "none":
            jump = self._resolve_spec(conf["proxyjump"].split(",")[0].strip(), depth=depth + 1)
        key = (conf.get("identityfile") or [None])[0]
        return Endpoint(
            profile=f"jump:{host}",
            host=conf.get("hostname", host),
            alias=host,
            port=port or int(conf.get("port", 22)),
            user=user or conf.get("user") or DEFAULT_USER,
            key_file=str(Path(key).expanduser()) if key else None,
            jump=jump,
            remote_dir=".",
        )


PATCHABLE = ("host", "port", "user", "key_file", "jump", "remote_dir", "max_channels", "sync", "shared")


MAX_KEY_FILE = 1024
"""A key file as given (the API's limit): made absolute when saved, it must stay within MAX_PATH."""


def _check_key_file(value: object) -> None:
    if isinstance(value, str) and len(value) > MAX_KEY_FILE:
        raise InputError(
            f"is {len(value)} characters long (limit {MAX_KEY_FILE})",
            where="key_file",
            fix="give the key's path (~/.ssh/... or absolute)",
        )


def profile_from_request(body: object, default_sync: SyncSettings | None = None) -> Profile:
    """A new profile from an API/JSON body, every field type-checked; unset sync values take the defaults."""
    if not isinstance(body, dict):
        raise InputError(f"must be a JSON object, not {type(body).__name__}", where="body")
    data = {k: v for k, v in body.items() if v is not None}
    _check_key_file(data.get("key_file"))
    sync = data.get("sync", {})
    if isinstance(sync, dict) and default_sync is not None:
        data["sync"] = {"upload": default_sync.upload, "delete_remote": default_sync.delete_remote, **sync}
    if "name" not in data:
        raise InputError(
            "is required", where="name", fix="letters, digits, '_' and '-', starting with a letter"
        )
    if "host" not in data:
        raise InputError("is required", where="host", fix="the instance's address or ~/.ssh/config alias")
    return Profile.from_json(data, where="")


def patched_profile(profile: Profile, body: object) -> Profile:
    """``profile`` with the fields of a PATCH body applied (``sync`` merged), validated like a new one."""
    if not isinstance(body, dict):
        raise InputError(f"must be a JSON object, not {type(body).__name__}", where="body")
    unknown = sorted(k for k in body if k not in PATCHABLE)
    if unknown:
        raise InputError(
            f"cannot change {', '.join(map(str, unknown))}", where=str(unknown[0]), fix=f"use {PATCHABLE}"
        )
    _check_key_file(body.get("key_file"))
    data = profile.to_json()
    for key, value in body.items():
        if key == "sync":
            if not isinstance(value, dict):
                raise InputError(f"must be an object, not {type(value).__name__}", where="sync")
            data["sync"] = {**data["sync"], **value}
        else:
            data[key] = value
    return Profile.from_json(data, where="")
