"""The warm CLI server (`ranktable.cli.warm`): cluster commands run in a fork of a process that has the
kubernetes client imported, on the caller's own stdin/stdout/stderr, environment and exit code."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.fixtures.simpool import SimPoolHandle
from tests.integration.warm_helpers import THROUGH_WARM
from tests.interrupt import interruptible

RANKTABLE = [sys.executable, "-m", "ranktable"]


@pytest.fixture
def warm_env(tmp_path: Path, sim_pool_process: SimPoolHandle) -> Iterator[dict[str, str]]:
    """A pool in its own process (`ranktable sim serve`), as users run it: its pods are not children of this
    test process, where the earlier tests' in-process pools ran (#28: a pod here once ended at once)."""
    pool = sim_pool_process
    env = {
        **os.environ,
        "RANKTABLE_HOME": str(tmp_path / "home"),
        "KUBECONFIG": str(pool.kubeconfig),
        "RANKTABLE_WARM": "1",
        "RANKTABLE_WARM_IDLE": "60",
    }
    try:
        yield env
    finally:
        subprocess.run(
            [sys.executable, "-c", "from ranktable.cli import warm; warm.stop()"], env=env, check=False
        )


def warm(env: dict[str, str], *argv: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", THROUGH_WARM, *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        **kwargs,
    )  # type: ignore[call-overload]


def wait_served(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The first run starts the server (and runs in-process); later runs are served once it listens."""
    first = subprocess.run([*RANKTABLE, "job", "list"], env=env, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    deadline = time.monotonic() + 60
    while True:
        done = warm(env, "job", "list")
        if done.returncode != 3 or time.monotonic() > deadline:
            return done
        time.sleep(0.2)


def test_a_cluster_command_is_served_warm_with_the_callers_output_and_exit_code(
    warm_env: dict[str, str],
) -> None:
    listed = wait_served(warm_env)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout == "no jobs in default\n"  # the command's output, on the caller's stdout
    missing = warm(warm_env, "job", "describe", "nosuch")
    assert missing.returncode == 1
    assert "ranktable job describe: job nosuch in default not found" in missing.stderr
    usage = warm(warm_env, "job", "describe")
    assert usage.returncode == 2  # argparse's usage error, from the child
    assert "the following arguments are required: name" in usage.stderr


def test_the_kubeconfig_and_cwd_are_the_callers_on_every_run(
    warm_env: dict[str, str], tmp_path: Path
) -> None:
    assert wait_served(warm_env).returncode == 0
    gone = warm({**warm_env, "KUBECONFIG": str(tmp_path / "elsewhere")}, "job", "list")
    assert gone.returncode == 1
    assert f"{tmp_path / 'elsewhere'}" in gone.stderr  # read afresh: no client kept from the last run
    (tmp_path / "work").mkdir()
    relative = warm(warm_env, "job", "list", "--kubeconfig", "kc", cwd=tmp_path / "work")
    assert relative.returncode == 1
    assert "kc: kubeconfig not found" in relative.stderr.replace(str(tmp_path / "work") + "/", "")


def submit_shell_job(env: dict[str, str], name: str, shell_line: str) -> None:
    """Submit a one-pod job running `shell_line` through `sh -c`, once the warm server serves."""
    assert wait_served(env).returncode == 0
    submitted = subprocess.run(
        [*RANKTABLE, "job", "submit", "--name", name, "--image", "img", "--nodes", "1", "--npus", "8",
         "--command", f"sh -c '{shell_line}'"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert submitted.returncode == 0, submitted.stderr


def follow_talker(env: dict[str, str]) -> subprocess.Popen[str]:
    """`job logs -f` of a job that prints `started` and sleeps, through the warm server (once it serves).
    The command is an argv, not run by a shell: `echo started; sleep 300` printed `started; sleep 300` and
    ended at once, so the follow sometimes ended before the test's Ctrl-C (#28)."""
    submit_shell_job(env, "talker", "echo started; exec sleep 300")
    return subprocess.Popen(
        [sys.executable, "-c", THROUGH_WARM, "job", "logs", "-f", "talker"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **interruptible(),
    )


@pytest.mark.parametrize("warm_run", [True, False], ids=["warm", "in-process"])
def test_a_follow_piped_into_head_ends_quietly_when_head_does(
    warm_env: dict[str, str], warm_run: bool
) -> None:
    """`job logs -f NAME | head -2` ends with head, silently, with the exit status of a command SIGPIPE
    ended (141), as kubectl's does: never a traceback, a `Broken pipe` error or a follow left running."""
    submit_shell_job(warm_env, "ticker", "while :; do echo tick; sleep 0.05; done")
    line = f'{sys.executable} -c "$THROUGH_WARM"' if warm_run else f"{sys.executable} -m ranktable"
    piped = subprocess.run(
        ["bash", "-c", f'{line} job logs -f ticker | head -2; echo "exit ${{PIPESTATUS[0]}}" >&2'],
        env={**warm_env, "THROUGH_WARM": THROUGH_WARM, "RANKTABLE_WARM": "1" if warm_run else "0"},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert [text.split("] ")[-1] for text in piped.stdout.splitlines()] == ["tick", "tick"]
    assert piped.stderr == "exit 141\n"


def test_ctrl_c_reaches_the_command_run_warm(warm_env: dict[str, str]) -> None:
    follow = follow_talker(warm_env)
    try:
        assert follow.stdout is not None and follow.stderr is not None
        assert "started" in follow.stdout.readline()  # the child follows the log on the caller's stdout
        follow.send_signal(signal.SIGINT)
        code, err = follow.wait(timeout=30), follow.stderr.read()
        assert (code, err) == (130, "ranktable: interrupted\n"), _what_happened(warm_env, follow)
    finally:
        follow.kill()


def _what_happened(env: dict[str, str], follow: subprocess.Popen[str]) -> str:
    """The follow's output, the job as the pool shows it and the warm server's log: what a failure needs."""
    assert follow.stdout is not None
    described = subprocess.run(
        [*RANKTABLE, "job", "describe", "talker"], env={**env, "RANKTABLE_WARM": "0"},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    where = "from ranktable.cli import warm; print(warm.socket_path())"
    socket = subprocess.run([sys.executable, "-c", where], env=env, capture_output=True, text=True)
    log = Path(socket.stdout.strip()).with_suffix(".log")
    server = log.read_text()[-3000:] if log.is_file() else "(no warm server log)"
    return (
        f"stdout: {follow.stdout.read()[-2000:]!r}\ndescribe: {described.stdout[-3000:]}{described.stderr}\n"
        f"warm server log: {server}"
    )


def _warm_children(env: dict[str, str]) -> list[int]:
    """The forked children of `env`'s warm server: processes of its command line (which names its socket)
    whose parent has it too. Other servers on the machine (other homes, other checkouts) are not counted."""
    socket_path = subprocess.run(
        [sys.executable, "-c", "from ranktable.cli import warm; print(warm.socket_path())"],
        env=env, capture_output=True, text=True, check=True,
    ).stdout.strip().encode()  # fmt: skip

    def command(pid: str) -> bytes:
        try:
            return Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return b""

    def parent(pid: str) -> str:
        try:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]
        except (OSError, IndexError):
            return ""

    mine = [p for p in os.listdir("/proc") if p.isdigit() and socket_path in command(p)]
    return [int(p) for p in mine if parent(p) in mine]


def test_a_run_killed_in_the_server_says_so_in_one_line(warm_env: dict[str, str]) -> None:
    """A child that ends without an exit code (killed, out of memory) is never a silent exit 1 (#28)."""
    follow = follow_talker(warm_env)
    try:
        assert follow.stdout is not None and follow.stderr is not None
        assert "started" in follow.stdout.readline()
        children = _warm_children(warm_env)
        assert len(children) == 1, children
        os.kill(children[0], signal.SIGKILL)
        assert follow.wait(timeout=30) == 1
        said = follow.stderr.read().splitlines()
        assert said == [
            f"ranktable: the warm CLI's run (pid {children[0]}) ended without an exit code; run the command"
            " again, or with RANKTABLE_WARM=0 to run it in this process"
        ]
    finally:
        follow.kill()


def test_plan_is_served_warm_with_the_output_and_errors_it_has_in_process(tmp_path: Path) -> None:
    """`plan` goes to the warm server too (its imports cost as much as reading a 65,536-rank table):
    the same JSON on stdout and the same one-line error as when it runs in the caller's process."""
    import ranktable.examples

    examples = Path(ranktable.examples.__file__).parent
    env = {**os.environ, "RANKTABLE_HOME": str(tmp_path / "home"), "RANKTABLE_WARM": "1"}
    env["RANKTABLE_WARM_IDLE"] = "60"
    argv = ["plan", "--ranktable", str(examples / "jobstart_hccl.json"), "--topology"]
    argv += [str(examples / "topology.yaml"), "--json"]
    in_process = subprocess.run(
        [*RANKTABLE, *argv], env={**env, "RANKTABLE_WARM": "0"}, capture_output=True, text=True, timeout=60
    )
    assert in_process.returncode == 0, in_process.stderr
    try:
        first = subprocess.run([*RANKTABLE, *argv], env=env, capture_output=True, text=True, timeout=60)
        assert first.stdout == in_process.stdout  # the first run starts the server and runs in-process
        where = "from ranktable.cli import warm; print(warm.socket_path())"
        socket = Path(subprocess.run([sys.executable, "-c", where], env=env, capture_output=True,
                                     text=True, check=True).stdout.strip())  # fmt: skip
        deadline = time.monotonic() + 60
        while not socket.exists() and time.monotonic() < deadline:  # `plan` started it: nothing else ran
            time.sleep(0.2)
        assert socket.exists(), "`ranktable plan` started no warm server"
        served = warm(env, *argv)
        assert served.returncode == 0, served.stderr
        assert served.stdout == in_process.stdout
        missing = warm(env, "plan", "--ranktable", str(tmp_path / "none.json"), "--topology", "t.conf")
        assert missing.returncode == 1
        assert missing.stderr.startswith("ranktable plan: ")
        assert "none.json" in missing.stderr and missing.stderr.count("\n") == 1
    finally:
        subprocess.run(
            [sys.executable, "-c", "from ranktable.cli import warm; warm.stop()"], env=env, check=False
        )


def test_one_interpreter_under_two_names_finds_one_server() -> None:
    """The `ranktable` script runs `.venv/bin/python3`, a user's `python -m ranktable` `.venv/bin/python`:
    the same code and interpreter, so the same socket (the bench once waited for a server under the other
    name's tag)."""
    folder = Path(sys.executable).parent
    names = [folder / n for n in ("python", "python3") if (folder / n).exists()]
    assert len(names) == 2, names
    tags = {
        subprocess.run(
            [str(name), "-c", "from ranktable.cli.warm import code_tag; print(code_tag())"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
        for name in names
    }  # fmt: skip
    assert len(tags) == 1, tags
