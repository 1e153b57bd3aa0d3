"""#26.2: a remote kernel's shell replies survive outages like its output. A cell's `execute_reply` sent
while SSH is down reached nobody (IOPub was replayed, the reply never came: JupyterLab showed the cell
running forever); now the instance keeps shell replies like IOPub and they reach the client after the
reconnect, exactly once. Real OpenSSH sshd; the connection is cut around the moment cells finish, many
times, at different offsets."""

from __future__ import annotations

import os
import queue
import time

import pytest
from jupyter_client import KernelManager
from jupyter_client.blocking import BlockingKernelClient

from tests.integration.fixtures.sshd import SshServer

pytestmark = pytest.mark.fault

ROUNDS = int(os.environ.get("RANKTABLE_SHELL_CUT_ROUNDS", "8"))


def _cut_until(sshd: SshServer, end: float) -> None:
    """The network is down until `end`: every SSH connection is cut as soon as it appears."""
    while time.monotonic() < end:
        sshd.kill_connections()
        time.sleep(0.05)


def _replies(kc: BlockingKernelClient, timeout: float, settle: float) -> list[dict]:
    """Every shell message until `timeout`, then `settle` more seconds of quiet for a doubled one."""
    out: list[dict] = []
    deadline = time.monotonic() + timeout
    while True:
        wait = deadline - time.monotonic()
        if wait <= 0:
            return out
        try:
            out.append(kc.get_shell_msg(timeout=wait))
        except queue.Empty:
            return out
        deadline = min(deadline, time.monotonic() + settle) if out else deadline


def test_execute_replies_sent_while_ssh_is_down_arrive_once(
    remote_kernel: tuple[KernelManager, BlockingKernelClient], sshd: SshServer
) -> None:
    _km, kc = remote_kernel
    kc.execute("n = 0", silent=True)
    assert kc.get_shell_msg(timeout=60)["content"]["status"] == "ok"
    for round_ in range(ROUNDS):
        cell = 1.0 + 0.15 * (round_ % 5)  # the cut starts before the cell ends and lasts past its end
        msg_id = kc.execute(f"import time; time.sleep({cell}); n += 1; n")
        time.sleep(0.5)
        _cut_until(sshd, time.monotonic() + cell + 1.5)
        replies = _replies(kc, timeout=60, settle=3)
        mine = [r for r in replies if r["parent_header"].get("msg_id") == msg_id]
        assert len(mine) == 1, f"round {round_}: {len(mine)} replies ({len(replies)} shell messages)"
        assert mine[0]["content"]["status"] == "ok" and mine[0]["content"]["execution_count"] > 0
    # the kernel ran each cell once: n counts them
    msg_id = kc.execute("", silent=True, user_expressions={"n": "n"})
    reply = kc.get_shell_msg(timeout=60)
    assert reply["parent_header"]["msg_id"] == msg_id
    assert reply["content"]["user_expressions"]["n"]["data"]["text/plain"] == str(ROUNDS)


def test_input_still_reaches_the_client_through_the_reply_keeper(
    remote_kernel: tuple[KernelManager, BlockingKernelClient],
) -> None:
    """The kernel sends `input()`'s request to the client identity of the execute_request: the keeper's
    DEALER carries the client's own identity, so it reaches the client's stdin socket."""
    _km, kc = remote_kernel
    msg_id = kc.execute("answer = input('name? ')", allow_stdin=True)
    request = kc.get_stdin_msg(timeout=60)
    assert request["msg_type"] == "input_request" and request["content"]["prompt"] == "name? "
    kc.input("ranktable")
    reply = kc.get_shell_msg(timeout=60)
    assert reply["parent_header"]["msg_id"] == msg_id and reply["content"]["status"] == "ok"
    msg_id = kc.execute("", silent=True, user_expressions={"a": "answer"})
    reply = kc.get_shell_msg(timeout=60)
    assert reply["content"]["user_expressions"]["a"]["data"]["text/plain"] == "'ranktable'"
