"""SFTP for the simulated Notebook instance, confined to its sandbox root.

Paths are real absolute paths (the same ones `exec` commands see), so a profile's remote dir works for both
exec and SFTP; anything that resolves outside the root (``..``, absolute paths elsewhere, symlinks pointing
out) is refused with permission denied, never followed.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path
from typing import Any

import paramiko
from paramiko.sftp import (
    SFTP_FAILURE,
    SFTP_NO_SUCH_FILE,
    SFTP_OK,
    SFTP_OP_UNSUPPORTED,
    SFTP_PERMISSION_DENIED,
)


class RootedHandle(paramiko.SFTPHandle):
    """An open file; paramiko's SFTPHandle reads/writes through ``readfile``/``writefile``."""

    def __init__(self, fileobj: Any, flags: int, real_path: str) -> None:
        super().__init__(flags)
        self.real_path = real_path
        self.readfile = fileobj
        self.writefile = fileobj

    def stat(self) -> paramiko.SFTPAttributes | int:
        try:
            return paramiko.SFTPAttributes.from_stat(os.fstat(self.readfile.fileno()))
        except OSError as exc:
            return _status(exc)

    def chattr(self, attr: paramiko.SFTPAttributes) -> int:
        try:
            self.writefile.flush()
            apply_attributes(self.real_path, attr)
        except OSError as exc:
            return _status(exc)
        return SFTP_OK


class RootedSFTPServer(paramiko.SFTPServerInterface):
    """SFTPServerInterface whose every path must stay inside ``root``."""

    def __init__(self, server: paramiko.ServerInterface, *args: Any, root: str, **kwargs: Any) -> None:
        super().__init__(server, *args, **kwargs)
        self.root = os.path.realpath(root)

    # -- path confinement ---------------------------------------------------------------------------
    def _inside(self, real: str) -> bool:
        return real == self.root or real.startswith(self.root + os.sep)

    def _lexical(self, path: str) -> str:
        """The absolute, normalised path a client means (relative paths are relative to the root)."""
        path = path or "."
        joined = path if path.startswith("/") else os.path.join(self.root, path)
        return os.path.normpath(joined)

    def _resolve(self, path: str, *, follow_last: bool = True) -> str | None:
        """Real path inside the root, or None when the path (or a symlink on the way) leads outside."""
        lexical = self._lexical(path)
        if not self._inside(lexical):
            return None
        if follow_last:
            real = os.path.realpath(lexical)
        else:
            real = os.path.join(os.path.realpath(os.path.dirname(lexical)), os.path.basename(lexical))
        return real if self._inside(real) else None

    # -- interface ----------------------------------------------------------------------------------
    def canonicalize(self, path: str) -> str:
        # Outside the root: the normalised path is returned as is, and every use of it is then refused.
        real = self._resolve(path)
        return real if real is not None else self._lexical(path)

    def list_folder(self, path: str) -> list[paramiko.SFTPAttributes] | int:
        real = self._resolve(path)
        if real is None:
            return SFTP_PERMISSION_DENIED
        try:
            out = []
            for name in os.listdir(real):
                attr = paramiko.SFTPAttributes.from_stat(os.lstat(os.path.join(real, name)))
                attr.filename = name
                out.append(attr)
            return out
        except OSError as exc:
            return _status(exc)

    def stat(self, path: str) -> paramiko.SFTPAttributes | int:
        return self._stat(path, follow=True)

    def lstat(self, path: str) -> paramiko.SFTPAttributes | int:
        return self._stat(path, follow=False)

    def _stat(self, path: str, *, follow: bool) -> paramiko.SFTPAttributes | int:
        real = self._resolve(path, follow_last=follow)
        if real is None:
            return SFTP_PERMISSION_DENIED
        try:
            return paramiko.SFTPAttributes.from_stat(os.stat(real, follow_symlinks=follow))
        except OSError as exc:
            return _status(exc)

    def open(self, path: str, flags: int, attr: paramiko.SFTPAttributes) -> paramiko.SFTPHandle | int:
        real = self._resolve(path)
        if real is None:
            return SFTP_PERMISSION_DENIED
        mode = getattr(attr, "st_mode", None)
        try:
            binary_flag = getattr(os, "O_BINARY", 0)
            fd = os.open(real, flags | binary_flag | os.O_NOFOLLOW, mode if mode is not None else 0o666)
        except OSError as exc:
            return _status(exc)
        if flags & os.O_WRONLY:
            fmode = "ab" if flags & os.O_APPEND else "wb"
        elif flags & os.O_RDWR:
            fmode = "a+b" if flags & os.O_APPEND else "r+b"
        else:
            fmode = "rb"
        try:
            fileobj = os.fdopen(fd, fmode)
        except OSError as exc:
            os.close(fd)
            return _status(exc)
        return RootedHandle(fileobj, flags, real)

    def remove(self, path: str) -> int:
        real = self._resolve(path, follow_last=False)
        if real is None or real == self.root:
            return SFTP_PERMISSION_DENIED
        return _call(os.remove, real)

    def rename(self, oldpath: str, newpath: str) -> int:
        old, new = self._resolve(oldpath, follow_last=False), self._resolve(newpath, follow_last=False)
        if old is None or new is None or self.root in (old, new):
            return SFTP_PERMISSION_DENIED
        if os.path.lexists(new):
            return SFTP_FAILURE  # SFTP v3 rename must not overwrite; posix-rename does
        return _call(os.rename, old, new)

    def posix_rename(self, oldpath: str, newpath: str) -> int:
        old, new = self._resolve(oldpath, follow_last=False), self._resolve(newpath, follow_last=False)
        if old is None or new is None or self.root in (old, new):
            return SFTP_PERMISSION_DENIED
        return _call(os.replace, old, new)

    def mkdir(self, path: str, attr: paramiko.SFTPAttributes) -> int:
        real = self._resolve(path, follow_last=False)
        if real is None:
            return SFTP_PERMISSION_DENIED
        result = _call(os.mkdir, real)
        if result == SFTP_OK and attr is not None:
            try:
                apply_attributes(real, attr)
            except OSError as exc:
                return _status(exc)
        return result

    def rmdir(self, path: str) -> int:
        real = self._resolve(path, follow_last=False)
        if real is None or real == self.root:
            return SFTP_PERMISSION_DENIED
        return _call(os.rmdir, real)

    def chattr(self, path: str, attr: paramiko.SFTPAttributes) -> int:
        real = self._resolve(path)
        if real is None:
            return SFTP_PERMISSION_DENIED
        try:
            apply_attributes(real, attr)
        except OSError as exc:
            return _status(exc)
        return SFTP_OK

    def readlink(self, path: str) -> str | int:
        real = self._resolve(path, follow_last=False)
        if real is None:
            return SFTP_PERMISSION_DENIED
        try:
            return os.readlink(real)
        except OSError as exc:
            return _status(exc)

    def symlink(self, target_path: str, path: str) -> int:
        link = self._resolve(path, follow_last=False)
        if link is None:
            return SFTP_PERMISSION_DENIED
        target = (
            target_path if target_path.startswith("/") else os.path.join(os.path.dirname(link), target_path)
        )
        if not self._inside(os.path.realpath(target)):
            return SFTP_PERMISSION_DENIED  # a link pointing out of the sandbox would be an escape hatch
        if not Path(os.path.dirname(link)).is_dir():
            return SFTP_NO_SUCH_FILE
        return _call(os.symlink, target_path, link)


def apply_attributes(path: str, attr: paramiko.SFTPAttributes) -> None:
    """SETSTAT/FSETSTAT. Not paramiko's ``set_file_attr``: for a size it reopens the file with "w+", which
    empties it first (OpenSSH's scp sets the size after writing: the upload would turn into zeros)."""
    flags = getattr(attr, "_flags", 0)
    if flags & attr.FLAG_SIZE:
        os.truncate(path, attr.st_size or 0)
    if flags & attr.FLAG_PERMISSIONS and attr.st_mode is not None:
        os.chmod(path, stat.S_IMODE(attr.st_mode))
    if flags & attr.FLAG_UIDGID and attr.st_uid is not None and attr.st_gid is not None:
        os.chown(path, attr.st_uid, attr.st_gid)
    if flags & attr.FLAG_AMTIME and attr.st_atime is not None and attr.st_mtime is not None:
        os.utime(path, (attr.st_atime, attr.st_mtime))


def _status(exc: OSError) -> int:
    return int(paramiko.SFTPServer.convert_errno(exc.errno or errno.EIO))


def _call(fn: Any, *args: str) -> int:
    try:
        fn(*args)
    except NotImplementedError:
        return SFTP_OP_UNSUPPORTED
    except OSError as exc:
        return _status(exc)
    return SFTP_OK


class SimSFTPServer(paramiko.SFTPServer):
    """paramiko's SFTP subsystem plus the exit status OpenSSH clients expect when it ends
    (without it ``scp``/``sftp`` report failure even though every transfer succeeded)."""

    def finish_subsystem(self) -> None:
        channel = self.sock
        if channel is not None:
            with contextlib.suppress(Exception):
                channel.send_exit_status(0)
        super().finish_subsystem()
