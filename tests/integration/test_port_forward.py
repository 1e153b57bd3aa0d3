"""Port forwarding to a web app on the instance through the profile's transport (ProxyJump included),
from the registry, the CLI, the magic and the REST API; bound to 127.0.0.1 only. Real sshd."""

from __future__ import annotations

import asyncio
import http.server
import os
import signal
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ranktable.cli import main
from ranktable.errors import ConflictError, InputError, NotFoundError
from ranktable.remote import ConnectionManager, ProfileStore
from ranktable.remote.errors import SshError
from ranktable.remote.forwards import ForwardRegistry, check_port
from ranktable.remote.manager import default_manager
from tests.integration.fixtures.sshd import SshdProfile
from tests.integration.server_helpers import call, extension_with_state


@pytest.fixture
def web_app(tmp_path: Path) -> Iterator[int]:
    """A web app listening on the instance's loopback (the sshd runs on this machine)."""
    (tmp_path / "www").mkdir()
    (tmp_path / "www" / "index.html").write_text("<h1>TensorBoard</h1>")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, directory=str(tmp_path / "www"), **kwargs)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield int(server.server_address[1])
    server.shutdown()
    server.server_close()


def fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode()


def refused(port: int, host: str = "127.0.0.1") -> bool:
    try:
        socket.create_connection((host, port), timeout=2).close()
    except OSError:
        return True
    return False


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_forward_through_a_jump_host_bound_to_loopback_only(sshd_profile: SshdProfile, web_app: int) -> None:
    store = ProfileStore(sshd_profile.home)
    server = sshd_profile.server
    store.add(server.profile("inner", jump="box"))
    manager = ConnectionManager(store)
    registry = ForwardRegistry(manager)
    try:
        forward = registry.open("inner", web_app)
        assert fetch(forward.url) == "<h1>TensorBoard</h1>"
        assert manager.get("inner").jump is manager.get("box")  # it went through the jump host
        assert manager.get("box").is_connected
        assert refused(forward.local_port, "127.0.0.2")  # 127.0.0.1 only, not the whole loopback net
        assert [f.id for f in registry.list()] == [forward.id]
        second = registry.open("inner", web_app)  # several forwards, separate local ports
        assert second.local_port != forward.local_port and fetch(second.url).startswith("<h1>")
        registry.close(forward.id)
        assert refused(forward.local_port)
        assert [f.id for f in registry.list()] == [second.id]
        with pytest.raises(NotFoundError):
            registry.close(forward.id)
    finally:
        registry.close_all()
        manager.close()


def test_forward_errors_are_clear(sshd_profile: SshdProfile, web_app: int) -> None:
    registry = ForwardRegistry(sshd_profile.manager)  # type: ignore[arg-type]
    try:
        with pytest.raises(SshError, match="nothing accepts connections on port"):
            registry.open("box", _free_port())
        with pytest.raises(InputError, match="port number"):
            registry.open("box", 70000)
        with pytest.raises(InputError, match="port number"):
            registry.open("box", "6006")
        with pytest.raises(InputError, match="port number"):
            registry.open("box", 6006.5)
        assert check_port(6006.0, "remote_port") == 6006  # JSON Schema's integer (schemathesis seed 7)
        taken = registry.open("box", web_app)
        with pytest.raises(ConflictError, match="already in use"):
            registry.open("box", web_app, taken.local_port)
    finally:
        registry.close_all()


def test_cli_forward_runs_until_interrupted(
    sshd_profile: SshdProfile, web_app: int, capsys: pytest.CaptureFixture[str], ctrl_c: None
) -> None:
    local = _free_port()
    seen: list[str] = []

    def use_then_interrupt() -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and refused(local):
            time.sleep(0.1)
        seen.append(fetch(f"http://127.0.0.1:{local}/"))
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=use_then_interrupt, daemon=True).start()
    try:
        code = main(["ssh", "forward", "box", str(web_app), "--local-port", str(local)])
    finally:
        default_manager().close()
    assert code == 0
    assert seen == ["<h1>TensorBoard</h1>"]
    out = capsys.readouterr().out
    assert f"forwarding http://127.0.0.1:{local}/ -> box:{web_app}" in out and "forward closed" in out
    assert refused(local)


def test_magic_forward_open_list_close(sshd_profile: SshdProfile, web_app: int) -> None:
    """The magic goes through the same use case as the panel: it lists and closes the CLI's forwards too."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.extension_manager.load_extension("ranktable")
    proc = None
    try:
        magics = shell.magics_manager.registry["RanktableMagics"]
        magics.manager = sshd_profile.manager
        opened = shell.run_line_magic("ranktable", f"forward box {web_app}")
        assert f'href="{opened["url"]}"' in opened._repr_html_() and opened["bind"] == "127.0.0.1"
        assert fetch(opened["url"]) == "<h1>TensorBoard</h1>"
        listed = shell.run_line_magic("ranktable", "forward --list")
        assert [(f["id"], f["owner"]) for f in listed] == [(opened["id"], "this kernel")]
        assert opened["url"] in listed._repr_html_()

        local = _free_port()
        proc = _start_cli_forward(web_app, local)
        listed = shell.run_line_magic("ranktable", "forward --list")
        assert [(f["id"], f["owner"], f["local_port"]) for f in listed] == [
            (opened["id"], "this kernel", opened["local_port"]),
            (f"fwd-1@{proc.pid}", "another process", local),
        ]
        closed = shell.run_line_magic("ranktable", f"forward --close fwd-1@{proc.pid}")
        assert closed["id"] == f"fwd-1@{proc.pid}"
        out, err = proc.communicate(timeout=20)
        assert proc.returncode == 0 and "forward closed from another process" in out, err
        assert refused(local)

        shell.run_line_magic("ranktable", f"forward --close {opened['id']}")
        assert refused(opened["local_port"])
        assert list(shell.run_line_magic("ranktable", "forward --list")) == []
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        shell.extension_manager.unload_extension("ranktable")
        InteractiveShell.clear_instance()


@pytest.fixture
def jp_server_config(ranktable_home: Path) -> dict[str, Any]:
    return extension_with_state(ranktable_home)


async def test_rest_forward_open_list_close(jp_fetch: Any, sshd_profile: SshdProfile, web_app: int) -> None:
    """With a local port asked for (0: any), a 127.0.0.1 TCP forward; without, see test_forward_proxy.py."""
    body = {"profile": "box", "remote_port": web_app, "local_port": 0}
    opened = await call(jp_fetch, "ranktable", "forwards", method="POST", body=body, expect=201)
    assert opened["bind"] == "127.0.0.1" and opened["url"] == f"http://127.0.0.1:{opened['local_port']}/"
    assert await asyncio.to_thread(fetch, opened["url"]) == "<h1>TensorBoard</h1>"
    listed = await call(jp_fetch, "ranktable", "forwards")
    assert [f["id"] for f in listed["forwards"]] == [opened["id"]]
    await call(jp_fetch, "ranktable", "forwards", opened["id"], method="DELETE")
    assert refused(opened["local_port"])
    assert (await call(jp_fetch, "ranktable", "forwards"))["forwards"] == []
    bad = await call(
        jp_fetch,
        "ranktable",
        "forwards",
        method="POST",
        body={"profile": "box", "remote_port": 0},
        expect=400,
    )
    assert bad["field"] == "remote_port"
    await call(jp_fetch, "ranktable", "forwards", "fwd-99", method="DELETE", expect=404)


def _start_cli_forward(web_app: int, local: int) -> Any:
    """`ranktable ssh forward` in its own process (same RANKTABLE_HOME and profile as the test)."""
    import subprocess
    import sys

    code = "import sys; from ranktable.cli import main; sys.exit(main(sys.argv[1:]))"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    args = ["ssh", "forward", "box", str(web_app), "--local-port", str(local)]
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    record = Path(os.environ["RANKTABLE_HOME"]) / "forwards" / f"{proc.pid}-fwd-1.json"
    while not record.exists():  # recorded once it listens
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the CLI forward never started"
        time.sleep(0.1)
    return proc


async def test_the_panel_lists_and_closes_a_forward_of_another_process(
    jp_fetch: Any, sshd_profile: SshdProfile, web_app: int
) -> None:
    local = _free_port()
    proc = await asyncio.to_thread(_start_cli_forward, web_app, local)
    try:
        listed = (await call(jp_fetch, "ranktable", "forwards"))["forwards"]
        assert [(f["id"], f["owner"], f["local_port"], f["remote_port"]) for f in listed] == [
            (f"fwd-1@{proc.pid}", "another process", local, web_app)
        ]
        assert "started" not in listed[0] and listed[0]["url"] == f"http://127.0.0.1:{local}/"
        closed = await call(jp_fetch, "ranktable", "forwards", f"fwd-1@{proc.pid}", method="DELETE")
        assert closed["id"] == f"fwd-1@{proc.pid}"
        out, err = await asyncio.to_thread(proc.communicate, timeout=20)
        assert proc.returncode == 0, err
        assert "forward closed from another process" in out  # the CLI stopped by itself
        assert refused(local)
        assert (await call(jp_fetch, "ranktable", "forwards"))["forwards"] == []
        await call(jp_fetch, "ranktable", "forwards", f"fwd-1@{proc.pid}", method="DELETE", expect=404)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_records_of_ended_or_reused_processes_are_dropped(sshd_profile: SshdProfile, web_app: int) -> None:
    import json
    import subprocess

    from ranktable.remote.forwards import close_other, other_forwards

    folder = sshd_profile.home / "forwards"
    folder.mkdir(parents=True, exist_ok=True)
    ended = subprocess.Popen(["true"])
    ended.wait()
    record = {"id": "fwd-1", "profile": "box", "remote_port": web_app, "local_port": 1, "url": "x"}
    (folder / f"{ended.pid}-fwd-1.json").write_text(json.dumps({**record, "pid": ended.pid, "started": "1"}))
    alive = subprocess.Popen(["sleep", "30"])  # a live pid, but not the process that wrote the record
    try:
        (folder / f"{alive.pid}-fwd-1.json").write_text(
            json.dumps({**record, "pid": alive.pid, "started": "1"})
        )
        assert other_forwards() == []
        assert sorted(folder.iterdir()) == []
        with pytest.raises(NotFoundError):
            close_other(f"fwd-1@{alive.pid}")
        with pytest.raises(NotFoundError):
            close_other("../../etc@1")
    finally:
        alive.kill()
        alive.wait()
    registry = ForwardRegistry(sshd_profile.manager)  # type: ignore[arg-type]
    try:
        forward = registry.open("box", web_app)
        mine = json.loads((folder / f"{os.getpid()}-{forward.id}.json").read_text())
        assert mine["pid"] == os.getpid() and mine["local_port"] == forward.local_port
        assert (folder / f"{os.getpid()}-{forward.id}.json").stat().st_mode & 0o777 == 0o600
        assert other_forwards() == []  # this process's own forwards are listed by its registry
    finally:
        registry.close_all()
    assert sorted(folder.iterdir()) == []


@pytest.mark.fault
def test_an_ssh_cut_mid_transfer_is_an_error_and_the_forward_serves_the_next_request(
    sshd_profile: SshdProfile, web_app: int, tmp_path: Path
) -> None:
    """The connection is cut while a forward streams 32 MiB: the reader sees the transfer break (never a
    silently short or doubled body), the forward stays listed and the next request gets every byte."""
    import hashlib
    import http.client

    payload = os.urandom(32 << 20)
    (tmp_path / "www" / "big.bin").write_bytes(payload)
    registry = ForwardRegistry(sshd_profile.manager)  # type: ignore[arg-type]
    try:
        forward = registry.open("box", web_app)
        got = bytearray()
        outcome: list[BaseException | None] = []

        def read_slowly() -> None:
            try:
                with urllib.request.urlopen(forward.url + "big.bin", timeout=30) as response:
                    while chunk := response.read(64 << 10):
                        got.extend(chunk)
                        time.sleep(0.01)  # ~6 MiB/s at most: the cut lands mid-transfer
                outcome.append(None)
            except (OSError, http.client.HTTPException) as exc:
                outcome.append(exc)

        reader = threading.Thread(target=read_slowly)
        reader.start()
        deadline = time.monotonic() + 30
        while len(got) < (1 << 20):
            assert time.monotonic() < deadline and reader.is_alive(), "the transfer did not start"
            time.sleep(0.01)
        assert sshd_profile.server.kill_connections() >= 1
        reader.join(60)
        assert not reader.is_alive()
        assert outcome and outcome[0] is not None, "a cut transfer ended as if complete"
        assert len(got) < len(payload) and bytes(got) == payload[: len(got)]  # a prefix: nothing doubled
        assert [f.id for f in registry.list()] == [forward.id]  # the forward is still there
        with urllib.request.urlopen(forward.url + "big.bin", timeout=60) as response:
            again = response.read()
        assert hashlib.sha256(again).digest() == hashlib.sha256(payload).digest()
    finally:
        registry.close_all()
