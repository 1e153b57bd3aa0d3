"""Connection profiles: what to connect to and how to sync, stored as JSON under ``RANKTABLE_HOME``.

A profile never holds a password or passphrase (a passphrase is asked for and kept in memory only).
Values left unset are filled from ``~/.ssh/config`` (HostName, User, Port, IdentityFile, ProxyJump) at
connect time, so users keep one source of truth for their hosts.
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import paramiko

from ranktable.errors import ConflictError, InputError, NotFoundError
from ranktable.home import ranktable_home
from ranktable.remote.state import write_private_json

NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
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


@dataclass(frozen=True)
class SyncSettings:
    """How a local folder is mirrored to the remote root."""

    upload: str = "explicit"  # always | explicit | never (automatic upload mode)
    delete_remote: bool = False  # delete remote files we uploaded once they are deleted locally
    ignore: tuple[str, ...] = ()  # extra gitignore-style patterns

    def __post_init__(self) -> None:
        if self.upload not in UPLOAD_MODES:
            raise InputError(
                f"unknown upload mode {self.upload!r}", where="sync.upload", fix=f"use one of {UPLOAD_MODES}"
            )


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

    def __post_init__(self) -> None:
        validate_name(self.name)
        if not self.host or any(c.isspace() for c in self.host):
            raise InputError(
                f"invalid host {self.host!r}", where="host", fix="give a host name or IP address"
            )
        if self.port is not None and not 0 < self.port < 65536:
            raise InputError(f"port {self.port} out of range", where="port", fix="use 1-65535 (SSH is 22)")
        if self.jump is not None:
            validate_name(self.jump, what="jump profile name")
            if self.jump == self.name:
                raise InputError(
                    "a profile cannot jump through itself", where="jump", fix="name another profile"
                )
        if not 1 <= self.max_channels <= 64:
            raise InputError(
                f"max_channels {self.max_channels} out of range",
                where="max_channels",
                fix="use 1-64 (Notebook instances allow at most 10 SSH sessions)",
            )
        if not self.remote_dir or "\0" in self.remote_dir:
            raise InputError("empty remote directory", where="remote_dir", fix="give e.g. /home/ma-user/work")

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["sync"]["ignore"] = list(self.sync.ignore)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any], *, where: str = "profile") -> Profile:
        try:
            sync = dict(data.get("sync") or {})
            sync["ignore"] = tuple(sync.get("ignore") or ())
            fields = {k: v for k, v in data.items() if k != "sync"}
            return cls(**fields, sync=SyncSettings(**sync))
        except TypeError as exc:
            raise InputError(
                f"malformed profile: {exc}", where=where, fix="re-create it with `ranktable ssh add`"
            ) from exc


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

    def _load(self) -> dict[str, Profile]:
        if not self.path.exists():
            return {}
        import json

        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise InputError(
                f"not valid JSON: {exc}", where=str(self.path), fix="fix or delete the file"
            ) from exc
        return {
            name: Profile.from_json(data, where=f"{self.path}: {name}")
            for name, data in (raw.get("profiles") or {}).items()
        }

    def _save(self, profiles: dict[str, Profile]) -> None:
        data = {"version": 1, "profiles": {n: p.to_json() for n, p in sorted(profiles.items())}}
        write_private_json(self.path, data)

    def list_profiles(self) -> list[Profile]:
        return list(self._load().values())

    def get(self, name: str) -> Profile:
        profiles = self._load()
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
        if profile.jump is not None and profile.jump not in profiles:
            raise NotFoundError(
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
        profiles = self._load()
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
            remote_dir=profile.remote_dir,
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
