"""Remote run against a real sshd: cwd is the remote root, streamed output, exit status, cancel kills all."""

from __future__ import annotations

import subprocess
import threading
import time
import uuid

import pytest

from ranktable.errors import InputError
from ranktable.remote.run import RemoteProcess, run_remote
from tests.integration.fixtures.sshd import SshdProfile


def _pgrep(pattern: str) -> list[str]:
    found = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout.split()
    return found


def test_runs_in_remote_root_with_exit_status(sshd_profile: SshdProfile) -> None:
    out: list[str] = []
    err: list[str] = []
    status = run_remote(
        sshd_profile.connection(), "pwd; echo oops >&2; exit 7", on_stdout=out.append, on_stderr=err.append
    )
    assert status == 7
    assert "".join(out) == f"{sshd_profile.remote_dir}\n"
    assert "".join(err) == "oops\n"


def test_python_file_with_arguments(sshd_profile: SshdProfile) -> None:
    (sshd_profile.remote_dir / "job.py").write_text("import os, sys\nprint(os.getcwd(), sys.argv[1:])\n")
    out: list[str] = []
    status = run_remote(
        sshd_profile.connection(), python_file="job.py", args=["a b", "--x"], on_stdout=out.append
    )
    assert status == 0
    assert "".join(out) == f"{sshd_profile.remote_dir} ['a b', '--x']\n"
    with pytest.raises(InputError):
        run_remote(sshd_profile.connection(), "true", python_file="job.py")


def test_ten_megabytes_on_both_streams_do_not_deadlock(sshd_profile: SshdProfile) -> None:
    sizes = {"out": 0, "err": 0}

    def count(key: str) -> object:
        def add(text: str) -> None:
            sizes[key] += len(text)

        return add

    command = "head -c 10000000 /dev/zero | tr '\\0' o & head -c 10000000 /dev/zero | tr '\\0' e >&2; wait"
    started = time.monotonic()
    status = run_remote(sshd_profile.connection(), command, on_stdout=count("out"), on_stderr=count("err"))  # type: ignore[arg-type]
    assert status == 0
    assert sizes == {"out": 10_000_000, "err": 10_000_000}
    assert time.monotonic() - started < 60


def test_cancel_kills_the_remote_process_tree(sshd_profile: SshdProfile) -> None:
    marker = f"ranktable-cancel-{uuid.uuid4().hex[:10]}"
    sleeper = "python3 -c 'import time; time.sleep(300)'"
    command = f"{sleeper} {marker}-child & {sleeper} {marker}-parent; wait"
    out: list[str] = []
    process = RemoteProcess(sshd_profile.connection(), command, on_stdout=out.append).start()
    pythons = rf"sleep\(300\) {marker}-"  # the two Python processes, not the shells around them
    deadline = time.monotonic() + 15
    while len(_pgrep(pythons)) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(_pgrep(pythons)) == 2
    assert process.pgid is not None
    assert out == []  # the process-group line is ours, not the user's output
    process.cancel()
    status = process.wait(timeout=15)
    assert status != 0  # setsid -w reports the signal number (15) of the killed group leader
    assert _pgrep(marker) == []
    group = subprocess.run(["pgrep", "-g", str(process.pgid)], capture_output=True, text=True).stdout
    assert group == ""


def test_cancel_event_stops_run_remote(sshd_profile: SshdProfile) -> None:
    marker = f"ranktable-evt-{uuid.uuid4().hex[:10]}"
    cancel = threading.Event()
    threading.Timer(1.0, cancel.set).start()
    started = time.monotonic()
    status = run_remote(sshd_profile.connection(), f"sleep 300; echo {marker}", cancel=cancel)
    assert time.monotonic() - started < 20
    assert status != 0
    assert _pgrep(f"sleep 300; echo {marker}") == []
