"""The remote side of a sync: one round trip resolves the root, learns its tools and lists its files.

Listing also removes what an interrupted sync left behind (our staging directories and temporary files),
so the next sync starts clean. Files are compared by size and mtime in whole seconds, which both ``find``
and SFTP report identically.
"""

from __future__ import annotations

import posixpath
import shlex
import stat
from dataclasses import dataclass

import paramiko

from ranktable.remote.connection import Connection
from ranktable.remote.errors import SshError

STAGING_PREFIX = ".ranktable-staging-"
TMP_MARK = ".ranktable-tmp-"
PRUNED_DIRS = (".git", "__pycache__", ".ipynb_checkpoints")


@dataclass(frozen=True)
class RemoteFile:
    size: int
    mtime: int


@dataclass(frozen=True)
class Capabilities:
    tar: bool
    gnu_mv: bool  # ``mv -t``: only probed (and needed) when python3 is missing
    sha256sum: bool
    find_printf: bool  # GNU find: the listing came from ``find -printf``
    python3: bool

    @property
    def tar_upload(self) -> bool:
        return self.tar and (self.python3 or self.gnu_mv)


@dataclass(frozen=True)
class Survey:
    root: str  # absolute remote root
    exists: bool
    caps: Capabilities
    files: dict[str, RemoteFile]
    links: frozenset[str] = (
        frozenset()
    )  # symbolic links under the root (never followed, never written through)

    def link_on_path(self, rel: str) -> str | None:
        """The remote symbolic link that ``rel`` is, or passes through, if any."""
        if not self.links:
            return None  # the common case: checked once per file, so it must cost nothing
        parts = rel.split("/")
        for end in range(1, len(parts) + 1):
            prefix = "/".join(parts[:end])
            if prefix in self.links:
                return prefix
        return None


LIST_MARK = b"--ranktable-list--\n"
LINK_PREFIX = b"L "  # "L <path>": a symbolic link (file records start with a digit)
END_PREFIX = b"END "  # "END <find exit status>": never a listing record (those start with a size)


MAX_LISTED_PATHS = 2000  # an incremental survey names at most this many paths (else: a full listing)


def _with_parents(rels: list[str]) -> list[str]:
    """The paths and every folder above them (a linked folder on the way must show up as a link)."""
    found: set[str] = set()
    for rel in rels:
        parts = rel.split("/")
        found.update("/".join(parts[:end]) for end in range(1, len(parts) + 1))
    return sorted(found)


def survey_script(root_expr: str, create: bool, only: list[str] | None = None) -> str:
    """Resolve (and create) the root, report tools, clean leftovers, list every file, then ``END n``.

    Shell built-ins only, except ``find`` (and ``rm`` when leftovers exist): a survey starts no other
    process, which keeps a no-op sync cheap on a busy instance. With ``only`` (an automatic upload of a
    few saved files), just those paths and their folders are looked at: the cost no longer grows with
    the size of the tree.
    """
    prune = " -o ".join(f"-name {shlex.quote(d)}" for d in (*PRUNED_DIRS, STAGING_PREFIX + "*"))
    # `[ -d ]` is a built-in: the usual case (the root exists) starts no `mkdir` process
    make = f"{{ [ -d {root_expr} ] || mkdir -p -- {root_expr}; }} && " if create else ""
    if only is not None:
        files = [e for e in only if not e.endswith("/")]
        folders = [e.rstrip("/") for e in only if e.endswith("/")]
        paths = " ".join(shlex.quote("./" + rel) for rel in _with_parents(files + folders))
        below = " ".join(shlex.quote("./" + rel) for rel in folders)
        record = "-type f -printf '%s %T@ %p\\0' -o -type l -printf 'L %p\\0'"
        listing = "find . -maxdepth 0 -printf '' 2>/dev/null; s=$?; "
        if paths:
            listing += f"find {paths} -maxdepth 0 \\( {record} \\) 2>/dev/null; "
        if below:  # the folders' contents (pruned like a full listing)
            listing += f"find {below} -mindepth 1 \\( {prune} \\) -prune -o {record} 2>/dev/null; "
        listing += "printf 'END %s\\0' $s"
    else:
        listing = (
            f'for d in ./{STAGING_PREFIX}*; do [ -e "$d" ] && rm -rf -- "$d"; done; '
            f"find . \\( {prune} \\) -prune -o -type f -name '*{TMP_MARK}*' -exec rm -f -- {{}} + "
            "-o -type f -printf '%s %T@ %P\\0' -o -type l -printf 'L %P\\0'; printf 'END %s\\0' $?"
        )
    return (
        f"if {make}cd -P -- {root_expr} 2>/dev/null; then printf '+%s\\n' \"$PWD\"; "
        f"else printf -- '-%s\\n' {root_expr}; fi; "
        "for t in tar sha256sum python3; do command -v $t >/dev/null 2>&1 && printf 'have %s\\n' $t; done; "
        "command -v python3 >/dev/null 2>&1 || "
        "{ mv --version 2>/dev/null | head -n 1 | grep -q GNU && printf 'have gnu-mv\\n'; }; "
        f"printf -- '{LIST_MARK.decode().strip()}\\n'; "
        f"cd -- {root_expr} 2>/dev/null || exit 0; " + listing
    )


def root_expression(remote_dir: str) -> str:
    """``remote_dir`` as a shell word, ``~`` expanded by the remote shell."""
    if remote_dir == "~":
        return '"$HOME"'
    if remote_dir.startswith("~/"):
        return '"$HOME"' + shlex.quote(remote_dir[1:])
    return shlex.quote(remote_dir)


def parse_survey(conn: Connection, head: bytes, records: list[bytes], find_status: int) -> Survey:
    """Interpret what ``survey_script`` printed (``records``: the listing without its END record)."""
    lines = head.decode("utf-8", "replace").splitlines()
    if not lines or lines[0][1:2] != "/":
        raise SshError(
            f"cannot use remote directory {conn.endpoint.remote_dir}: unexpected answer {lines[:1]}",
            where=f"profile {conn.name}",
            fix=f"choose a writable remote directory (ssh add {conn.name} --remote-dir DIR)",
        )
    have = {line[5:] for line in lines[1:] if line.startswith("have ")}
    caps = Capabilities(
        tar="tar" in have,
        gnu_mv="gnu-mv" in have,
        sha256sum="sha256sum" in have,
        find_printf=find_status == 0,
        python3="python3" in have,
    )
    exists, root = lines[0].startswith("+"), lines[0][1:]
    files: dict[str, RemoteFile] = {}
    links: set[str] = set()
    if not exists:
        pass
    elif not caps.find_printf:
        files, links = _list_sftp(conn, root)  # no GNU find: walk with SFTP (slower, same answer)
    else:
        for record in records:  # "SIZE SECONDS.FRACTION PATH" (5,000 records: a few ms)
            if record.startswith(LINK_PREFIX):
                links.add(_relative(record[len(LINK_PREFIX) :]))
            elif record:
                size, mtime, rel = record.split(b" ", 2)
                files[_relative(rel)] = RemoteFile(int(size), int(mtime.partition(b".")[0]))
    return Survey(root, exists, caps, files, frozenset(links))


def _relative(raw: bytes) -> str:
    """A listed path relative to the root (incremental listings print ``./a/b``, full ones ``a/b``)."""
    text = raw.decode("utf-8", "surrogateescape")
    return text[2:] if text.startswith("./") else text


def _list_sftp(conn: Connection, root: str) -> tuple[dict[str, RemoteFile], set[str]]:
    files: dict[str, RemoteFile] = {}
    links: set[str] = set()
    with conn.sftp() as sftp:
        stack = [""]
        while stack:
            rel_dir = stack.pop()
            try:
                entries = sftp.listdir_attr(posixpath.join(root, rel_dir) if rel_dir else root)
            except FileNotFoundError:
                continue
            for attr in entries:
                name = attr.filename
                rel = f"{rel_dir}/{name}" if rel_dir else name
                mode = attr.st_mode or 0  # listdir_attr reports lstat(): links are links
                if stat.S_ISLNK(mode):
                    links.add(rel)
                elif stat.S_ISDIR(mode):
                    if name.startswith(STAGING_PREFIX) and not rel_dir:
                        _rmtree_sftp(sftp, posixpath.join(root, rel))
                    elif name not in PRUNED_DIRS:
                        stack.append(rel)
                elif stat.S_ISREG(mode):
                    if TMP_MARK in name:
                        sftp.remove(posixpath.join(root, rel))
                    else:
                        files[rel] = RemoteFile(int(attr.st_size or 0), int(attr.st_mtime or 0))
    return files, links


def _rmtree_sftp(sftp: paramiko.SFTPClient, path: str) -> None:
    for attr in sftp.listdir_attr(path):
        child = posixpath.join(path, attr.filename)
        if stat.S_ISDIR(attr.st_mode or 0):
            _rmtree_sftp(sftp, child)
        else:
            sftp.remove(child)
    sftp.rmdir(path)


def remote_sha256(conn: Connection, root: str, rels: list[str]) -> dict[str, str]:
    """sha256 of remote files (in input order; names never parsed back, so any name is safe)."""
    if not rels:
        return {}
    payload = b"".join(rel.encode("utf-8", "surrogateescape") + b"\0" for rel in rels)
    result = conn.run(f"cd -- {shlex.quote(root)} && xargs -0 sha256sum --", stdin=payload)
    if result.exit_status != 0:
        raise SshError(
            f"cannot hash remote files: {result.stderr.decode(errors='replace').strip()}",
            fix="check that sha256sum exists on the instance",
        )
    return parse_sha256sum(result.stdout, rels)


def parse_sha256sum(output: bytes, rels: list[str]) -> dict[str, str]:
    """``sha256sum`` lines for ``rels`` (same order). A line is matched to its name, never assumed by
    position, so a file that could not be hashed is simply absent from the answer."""
    hashes: dict[str, str] = {}
    wanted = iter(rels)
    pending = next(wanted, None)
    for line in output.split(b"\n"):
        if pending is None:
            break
        if len(line) < 66:
            continue
        escaped = line.startswith(b"\\")  # names with a backslash or newline are escaped
        body = line[1:] if escaped else line
        digest, name = body[:64].decode("ascii", "replace"), body[66:]
        if escaped:
            name = name.replace(b"\\n", b"\n").replace(b"\\\\", b"\\")
        while pending is not None and name != pending.encode("utf-8", "surrogateescape"):
            pending = next(wanted, None)  # files that produced no line (gone, unreadable)
        if pending is not None:
            hashes[pending] = digest
            pending = next(wanted, None)
    return hashes
