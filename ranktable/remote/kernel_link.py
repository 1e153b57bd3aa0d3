"""What a remote kernel needs from a profile's SSH connection: run a command, open a forward, find the root.

A thin adapter over ``ranktable.remote.connection.Connection`` so the provisioner depends on three calls
only. Forwarded ZMQ sockets are long-lived ``direct-tcpip`` channels: they are opened on the profile's
transport directly rather than through the session-channel cap (they are not sessions — OpenSSH's
MaxSessions and the instance's 10-connection limit do not count them — and holding five cap slots per
kernel client for hours would starve sync and remote runs).
"""

from __future__ import annotations

import contextlib
from typing import Any

import paramiko

from ranktable.remote.errors import ConnectionLost

FORWARD_TIMEOUT = 15.0


class KernelLink:
    """A profile's connection as seen by a kernel provisioner."""

    def __init__(self, connection: Any, *, owned: bool) -> None:
        self.connection = connection
        self._owned = owned

    def run(self, command: str, stdin: bytes | None, timeout: float) -> tuple[int, bytes, bytes]:
        result = self.connection.run(command, stdin=stdin, timeout=timeout)
        return int(result.exit_status), bytes(result.stdout), bytes(result.stderr)

    def open_forward(self, target: tuple[str, int], origin: tuple[str, int]) -> paramiko.Channel:
        """A ``direct-tcpip`` channel to ``target`` on the remote; reconnects once if the transport died."""
        last: Exception | None = None
        for _attempt in (1, 2):
            transport = self.connection.transport()
            try:
                return transport.open_channel(
                    "direct-tcpip", dest_addr=target, src_addr=origin, timeout=FORWARD_TIMEOUT
                )
            except paramiko.ChannelException:
                raise  # the remote refused (nothing listening): no point reconnecting
            except (paramiko.SSHException, EOFError, OSError) as exc:
                last = exc
                with contextlib.suppress(Exception):
                    self.connection.probe()  # closes a dead transport so transport() reconnects
        raise ConnectionLost(
            f"cannot forward to {target[0]}:{target[1]} on profile {self.connection.name}: {last}",
            where=f"profile {self.connection.name}",
            fix="check the instance and the network; the kernel reconnects on the next attempt",
        )

    def remote_dir(self) -> str:
        """The profile's remote root as an absolute path (created if missing)."""
        return str(self.connection.remote_root())

    def close(self) -> None:
        if self._owned:
            self.connection.close()


def open_link(profile: str) -> KernelLink:
    """The shared connection of ``profile`` (one transport per profile in this process)."""
    from ranktable.remote import default_manager

    return KernelLink(default_manager().get(profile), owned=False)
