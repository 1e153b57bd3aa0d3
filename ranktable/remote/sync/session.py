"""A whole sync over ONE exec channel: the remote side answers a survey, then waits for the upload.

The remote script prints the root, its tools and the listing of every file, then reads commands from
stdin: ``hash N`` (N bytes of NUL-separated paths follow: it prints their sha256 and a mark; used to
catch remote edits that kept size and mtime), ``tar-py`` / ``tar-sh`` (a tar stream follows: extract
into a staging directory, apply with Python's ``os.replace`` or with ``mv``), ``tar-few`` (a few files:
shell lines up to a mark, then a tar stream extracted beside the targets and moved into place, the
remote-edit check done in the same step) or anything else (stop).
The client plans between the two, so a sync costs one channel and no extra process start-up — what
makes no-op and one-file syncs cheap.
"""

from __future__ import annotations

import secrets
import threading

from ranktable.remote.connection import ChannelLease, Connection
from ranktable.remote.errors import ConnectionLost
from ranktable.remote.sync.manifest import Entry
from ranktable.remote.sync.progress import Meter
from ranktable.remote.sync.remote_tree import (
    END_PREFIX,
    LIST_MARK,
    STAGING_PREFIX,
    Survey,
    parse_sha256sum,
    parse_survey,
    root_expression,
    survey_script,
)
from ranktable.remote.sync.transfer import (
    OnDone,
    Upload,
    UploadItem,
    apply_command,
    check_status,
    drain_stderr,
    few_script,
    write_tar,
    write_tar_few,
)

HASHED_MARK = b"--ranktable-hashed--\n"


class RemoteSession:
    def __init__(self, conn: Connection, *, create: bool = True, only: list[str] | None = None) -> None:
        self.conn = conn
        self.staging = STAGING_PREFIX + secrets.token_hex(6)
        self._script_end = f"--ranktable-script-end-{self.staging}--"
        root_expr = root_expression(conn.endpoint.remote_dir)
        command = (
            f"{survey_script(root_expr, create, only)}; "
            'while read -r go; do case "$go" in "hash "*) '
            'head -c "${go#hash }" | xargs -0 sha256sum -- 2>/dev/null; '
            f"printf -- '{HASHED_MARK.decode().strip()}\\n';; *) break;; esac; done; "
            'case "$go" in tar-py|tar-sh|tar-few) ;; *) exit 0;; esac; '
            # tar-few: the apply lines come first, up to a mark, read with the `read` built-in (one byte
            # at a time from a pipe, so tar gets exactly the stream), and run once all of them arrived
            'if [ "$go" = tar-few ]; then s=; ok=; while IFS= read -r l; do '
            f'if [ "$l" = {self._script_end} ]; then ok=1; break; fi; s="$s$l\n"; done; '
            '[ -n "$ok" ] || exit 4; eval "$s"; '
            f'elif [ "$go" = tar-py ]; then {apply_command(self.staging, True)}; '
            f"else {apply_command(self.staging, False)}; fi"
        )
        self._lease: ChannelLease | None = conn.open_session()
        self.channel = self._lease.channel
        self.channel.exec_command(command)
        self._errors: list[bytes] = []
        self._reader = threading.Thread(
            target=lambda: self._errors.append(drain_stderr(self.channel)), daemon=True
        )
        self._reader.start()
        self._ended = False  # the remote script already exited (no root: nothing to wait for)
        self._pending = b""  # bytes received after the survey's END record
        self._output = b""  # what the remote side printed after the survey (tar-few: files left alone)
        self.incremental = only is not None  # the listing covers ``only`` (and their folders) alone

    def hash(self, rels: list[str]) -> dict[str, str]:
        """sha256 of remote files (relative to the root), in this session: no extra channel or login.

        Files that cannot be hashed (gone, unreadable) are missing from the answer.
        """
        if not rels:
            return {}
        payload = b"".join(rel.encode("utf-8", "surrogateescape") + b"\0" for rel in rels)
        self.channel.sendall(b"hash %d\n" % len(payload) + payload)
        buffer = self._pending
        while HASHED_MARK not in buffer:
            data = self.channel.recv(65536)
            if not data:
                raise ConnectionLost(
                    f"the remote side of profile {self.conn.name} ended while hashing files",
                    where=f"profile {self.conn.name}",
                    fix="retry the sync",
                )
            buffer += data
        answer, _, self._pending = buffer.partition(HASHED_MARK)
        return parse_sha256sum(answer, rels)

    def survey(self) -> Survey:
        buffer = b""
        while True:
            head, mark, listing = buffer.partition(LIST_MARK)
            if mark:
                records = listing.split(b"\0")
                for index, record in enumerate(records[:-1]):
                    if record.startswith(END_PREFIX):
                        status = int(record[len(END_PREFIX) :] or b"1")
                        self._pending = b"\0".join(records[index + 1 :])
                        return parse_survey(self.conn, head, records[:index], status)
            data = self.channel.recv(65536)
            if not data:  # the script ended early: the root does not exist (dry run) or the shell failed
                self._ended = True
                if not mark:
                    self._wait_exit()
                    raise ConnectionLost(
                        f"the remote survey of profile {self.conn.name} ended early: "
                        f"{b''.join(self._errors).decode('utf-8', 'replace').strip()[-300:]}",
                        where=f"profile {self.conn.name}",
                        fix="check the remote directory and the connection, then retry",
                    )
                return parse_survey(self.conn, head, [], 0)
            buffer += data

    def upload(self, upload: Upload, *, python: bool) -> None:
        self.channel.sendall(b"tar-py\n" if python else b"tar-sh\n")
        done: list[tuple[str, Entry]] = write_tar(
            self.channel, upload.root, self.staging, upload.items, upload.deletes, upload.meter, python
        )
        self.channel.shutdown_write()
        status = self._wait_exit()
        check_status(status, b"".join(self._errors))
        for rel, entry in done:
            upload.on_done(rel, entry)

    def upload_few(
        self,
        items: list[UploadItem],
        names: list[str],
        deletes: list[str],
        checks: dict[str, str],
        meter: Meter,
        on_done: OnDone,
    ) -> set[str]:
        """A few uploads and deletions applied by ``few_script`` (no staging folder, no Python start-up);
        the files of ``checks`` whose remote content changed are left alone and returned."""
        rels = [item.rel for item in items]
        script = few_script(rels, names, deletes, checks).encode("utf-8", "surrogateescape")
        self.channel.sendall(b"tar-few\n" + script + self._script_end.encode() + b"\n")
        done = write_tar_few(self.channel, items, names, meter)
        self.channel.shutdown_write()
        status = self._wait_exit()
        check_status(status, b"".join(self._errors))
        targets = [*rels, *deletes]
        changed = {
            targets[int(line[2:])]
            for line in self._output.split(b"\n")
            if line.startswith(b"C ") and line[2:].isdigit() and int(line[2:]) < len(targets)
        }
        for rel, entry in done:
            if rel not in changed:
                on_done(rel, entry)
        return changed

    def _wait_exit(self) -> int:
        chunks = [self._pending]
        while data := self.channel.recv(65536):  # only tar-few prints something after the survey
            chunks.append(data)
        self._output = b"".join(chunks)
        status = self.channel.recv_exit_status()
        self._reader.join(10)
        self.close()
        return status

    def finish(self) -> None:
        """Nothing to upload: let the remote script end."""
        if self._lease is None:
            return
        if not self._ended:
            try:
                self.channel.sendall(b"stop\n")
                self.channel.shutdown_write()
            except OSError:
                pass
        self._wait_exit()

    def close(self) -> None:
        if self._lease is not None:
            self._lease.close()
            self._lease = None


__all__ = ["RemoteSession"]
