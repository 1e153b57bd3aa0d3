"""SSH failures as specific, user-facing errors: what went wrong (``reason``) and how to fix it (``fix``).

The UI and the CLI catch these by type (e.g. ``PassphraseRequired`` -> ask for the passphrase,
``UnknownHostKey`` -> show the fingerprint with an "accept" action) instead of parsing paramiko's messages.
"""

from __future__ import annotations

from ranktable.errors import ContentError, RanktableError, Unavailable


class SshError(RanktableError):
    """Base class of every connection, host-key, key-file, sync and remote-run failure."""


class HostNotResolved(SshError, Unavailable):  # the instance cannot be reached: 503, not bad input
    """The host name does not resolve (DNS or /etc/hosts)."""


class ConnectionRefused(SshError, Unavailable):  # the instance cannot be reached: 503, not bad input
    """Nothing listens on the host's SSH port (instance stopped, wrong port)."""


class ConnectTimeout(SshError, Unavailable):  # the instance cannot be reached: 503, not bad input
    """The host did not answer in time (firewall, security group, wrong address)."""


class ConnectionLost(SshError, Unavailable):  # the instance cannot be reached: 503, not bad input
    """An established connection dropped (network, instance restarted, server killed the session)."""


class TooManyConnections(SshError):
    """The channel cap is reached and no channel freed in time, or the server refused another session."""


class KeyNotAccepted(SshError):
    """The server refused our key: the instance's key pair is a different one."""


class KeyFileError(SshError, ContentError):  # the profile's key file, not the request's shape: 422
    """The private key file is missing, unreadable, of an unsupported type or too widely readable."""


class KeyPermissionsTooOpen(KeyFileError):
    """The private key file is readable by group or others (OpenSSH refuses such keys too)."""


class PassphraseRequired(KeyFileError):
    """The private key is encrypted: ask the user for the passphrase (held in memory only) and retry."""


class WrongPassphrase(KeyFileError):
    """The passphrase given does not decrypt the private key."""


class HostKeyError(SshError):
    """Base class of host-key verification failures."""


class UnknownHostKey(HostKeyError):
    """The server's host key is in no known_hosts file: the user must check and accept its fingerprint."""

    def __init__(
        self, host_id: str, key_type: str, fingerprint: str, *, accept_hint: str | None = None
    ) -> None:
        self.host_id = host_id
        self.key_type = key_type
        self.fingerprint = fingerprint
        super().__init__(
            f"unknown host key for {host_id}: {key_type} {fingerprint}",
            fix=accept_hint or "check the fingerprint with the instance owner, then accept it",
        )


class HostKeyChanged(HostKeyError):
    """The server presents a different host key than the one recorded: possible man-in-the-middle."""

    def __init__(
        self,
        host_id: str,
        key_type: str,
        expected: str,
        presented: str,
        known_hosts: str,
        *,
        profile: str | None = None,
    ) -> None:
        self.host_id = host_id
        self.key_type = key_type
        self.expected = expected
        self.presented = presented
        self.known_hosts = known_hosts
        super().__init__(
            f"HOST KEY CHANGED for {host_id}: recorded {expected}, "
            f"server now presents {key_type} {presented}; "
            "refusing to connect (someone may be intercepting the connection, or the instance was recreated)",
            fix=f"if the instance was really recreated, check the new fingerprint with its owner, then trust "
            f"it: ranktable ssh test {profile or 'PROFILE'} --replace-host-key NEW_FINGERPRINT",
        )


class RemotePathError(SshError):
    """A remote path escapes the profile's remote root (``..`` or an absolute path elsewhere)."""


class SyncConflict(SshError):
    """Raised only when a caller asks for a conflict-free sync and conflicts remain."""
