"""Private keys: ed25519 / ECDSA / RSA in OpenSSH or PEM format, optionally passphrase-protected.

A key readable by group or others is refused (as OpenSSH does) with the chmod fix; an encrypted key
without a passphrase raises ``PassphraseRequired`` so the UI can ask for it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import paramiko
from paramiko.pkey import UnknownKeyType

from ranktable.limits import brief
from ranktable.remote.errors import KeyFileError, KeyPermissionsTooOpen, PassphraseRequired, WrongPassphrase


def check_permissions(path: Path) -> None:
    if os.name != "posix":
        return
    mode = path.stat().st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise KeyPermissionsTooOpen(
            f"key file {path} is accessible by others (mode {stat.S_IMODE(mode):03o}); "
            "OpenSSH and the instance refuse such keys",
            where=str(path),
            fix=f"chmod 600 {path}",
        )


def load_private_key(path: str | Path, passphrase: str | None = None) -> paramiko.PKey:
    path = Path(path).expanduser()
    try:
        found = path.is_file()
    except OSError as exc:  # a name too long for the file system, a folder we may not enter
        raise KeyFileError(
            f"key file {brief(str(path))} cannot be read ({exc.strerror})",
            where="key_file",
            fix="give the path of the .pem/.key file (--key FILE)",
        ) from exc
    if not found:
        raise KeyFileError(
            f"key file {path} not found",
            where=str(path),
            fix="give the .pem/.key downloaded when the instance's key pair was created (--key FILE)",
        )
    check_permissions(path)
    secret = passphrase.encode() if passphrase else None
    try:
        try:
            return paramiko.PKey.from_path(path, password=secret)  # type: ignore[arg-type]
        except TypeError as exc:  # cryptography: "password was not given" / "given but not encrypted"
            if secret is not None and "not encrypted" in str(exc):
                return paramiko.PKey.from_path(path)
            raise paramiko.PasswordRequiredException(str(exc)) from exc
    except paramiko.PasswordRequiredException as exc:
        raise PassphraseRequired(
            f"key file {path} is protected by a passphrase",
            where=str(path),
            fix="enter the passphrase when asked (it is kept in memory only)",
        ) from exc
    except UnknownKeyType as exc:
        raise KeyFileError(
            f"key file {path} is not a supported private key ({exc})",
            where=str(path),
            fix="use an ed25519, ECDSA or RSA private key in OpenSSH or PEM format",
        ) from exc
    except (paramiko.SSHException, ValueError) as exc:
        if passphrase:
            raise WrongPassphrase(
                f"the passphrase does not decrypt {path}",
                where=str(path),
                fix="enter the key's passphrase again",
            ) from exc
        raise KeyFileError(
            f"cannot read key file {path}: {exc}",
            where=str(path),
            fix="use an ed25519, ECDSA or RSA private key in OpenSSH or PEM format",
        ) from exc
