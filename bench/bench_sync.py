"""Sync benchmark against a local OpenSSH sshd: ranktable sync vs ``rsync -a -e ssh`` and ``scp -r``.

A tree of 5,000 files / 200 MB (random, incompressible bytes: 4,900 small "source" files and 100 larger
"data" files). Measured in one run, interleaved (the first syncs' order turns every round, each after an
``os.sync()``): first sync, no-op sync, one-file change, for
* ``ranktable`` in-process with a fresh connection each time (connect + sync: what a CLI run cost before
  the connection agent), and
* ``ranktable CLI``: the real ``ranktable sync`` command, a new process each time, going through the
  per-user connection agent (the first run starts it and connects, like OpenSSH's ControlMaster),
against ``rsync -a -e ssh`` (a new ssh login each time) on the same sshd.
Targets (ratio of medians to rsync): first sync <= 1.0x, one-file change < 0.8x, no-op < 0.8x.
``--settle S``: each round waits S seconds after deleting the remote trees before its first syncs.

    .venv/bin/python bench/bench_sync.py [--files 5000] [--mb 200]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ranktable.remote import ConnectionManager, ProfileStore  # noqa: E402
from ranktable.remote.sync import Syncer  # noqa: E402
from tests.integration.fixtures.sshd import SshServer, start_sshd  # noqa: E402

# ext4 without a journal (this machine's disk) skips, and re-checks on every new inode, the inodes deleted
# in the last 30-35 s: right after a round deletes four 5,000-file trees, that scan was 24-58% of the
# extracting side's CPU (docs/sync.md, "Fifth profile"). `--settle 36` starts the first syncs past that
# window; the default stays 0 so runs compare with the earlier ones (with 36 the first-sync ratio still
# swung 0.65x-1.17x over four idle runs: docs/benchmarks.md).
DELETE_SETTLE_S = 36.0


def make_tree(root: Path, files: int, total_mb: int, seed: int = 7) -> int:
    rng = random.Random(seed)
    big = max(1, files // 50)
    small = files - big
    total = total_mb * 1024 * 1024
    small_bytes = total // 5  # 20% of the bytes in the many small files, 80% in the few big ones
    sizes = [max(1, int(rng.expovariate(small / small_bytes))) for _ in range(small)]
    sizes += [(total - sum(sizes)) // big] * big
    for i, size in enumerate(sizes):
        path = root / f"pkg{i % 40}" / f"sub{i % 7}" / f"file{i}.{'bin' if i >= small else 'py'}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(os.urandom(size))
    return sum(sizes)


def timed(fn: object) -> float:
    start = time.perf_counter()
    fn()  # type: ignore[operator]
    return time.perf_counter() - start


def ranktable_sync(home: Path, local: Path) -> None:
    manager = ConnectionManager(ProfileStore(home))
    try:
        result = Syncer(manager.get("bench"), local).sync()
        assert not result.conflicts, result.summary()
    finally:
        manager.close()


def _peers(
    server: SshServer, work: Path, cli_home: Path, local: Path, dests: dict[str, Path], known: Path
) -> tuple[Callable[[], None], Callable[[], None], Callable[[], None], Callable[[], None]]:
    """The other sides of the comparison, each syncing `local` to its own destination: our CLI through
    its agent (with its own state in `cli_home`), rsync and scp; and how to stop the CLI's agent."""
    server.write_known_hosts(cli_home / "known_hosts")
    ProfileStore(cli_home).add(server.profile("bench", dests["cli"]))
    (work / "run").mkdir(mode=0o700)
    cli_env = {**os.environ, "RANKTABLE_HOME": str(cli_home), "RANKTABLE_AGENT": "1"}
    cli_env["XDG_RUNTIME_DIR"] = str(work / "run")
    cli_env["PYTHONPATH"] = str(ROOT)
    ranktable_bin = str(Path(sys.executable).with_name("ranktable"))

    def cli() -> None:
        done = subprocess.run(
            [ranktable_bin, "sync", "bench", str(local)], env=cli_env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stdout + done.stderr

    ssh = " ".join(server.ssh_command(known))
    target = f"{server.user}@{server.host}:"

    def rsync() -> None:
        subprocess.run(["rsync", "-a", "-e", ssh, f"{local}/", target + f"{dests['rsync']}/"], check=True)

    def scp() -> None:
        opts = ["-q", "-r", "-P", str(server.port), "-i", str(server.client_key)]
        opts += [
            "-o",
            f"UserKnownHostsFile={known}",
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            "BatchMode=yes",
        ]
        subprocess.run(["scp", *opts, str(local), target + str(dests["scp"])], check=True)

    def stop_agent() -> None:
        subprocess.run([ranktable_bin, "ssh", "agent", "stop"], env=cli_env, capture_output=True)

    return cli, rsync, scp, stop_agent


def _report(times: dict[str, list[float]]) -> None:
    """Each case's min and median against rsync's in the same run, and whether the targets are met."""
    med = {case: statistics.median(values) for case, values in times.items()}
    best = {case: min(values) for case, values in times.items()}
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    print(f"{'case':<16} {'mode':<28} {'s (min/median)':>16} {'rsync s (min/median)':>21} {'ratio':>7}")
    verdict = []
    targets = {"first": (1.0, "<="), "noop": (0.8, "<"), "one": (0.8, "<")}
    for label, key in (("first sync", "first"), ("no-op sync", "noop"), ("one-file change", "one")):
        rsync_k = f"{key}/rsync"
        for mode, name in (
            ("ranktable", "in-process, fresh connection"),
            ("cli", "CLI through the agent"),
        ):
            k = f"{key}/{mode}"
            ratio = med[k] / med[rsync_k]
            print(
                f"{label:<16} {name:<28} {best[k]:>6.2f} / {med[k]:<7.2f} {best[rsync_k]:>9.2f} / "
                f"{med[rsync_k]:<9.2f} {ratio:>6.2f}x"
            )
            limit, op = targets[key]
            verdict.append(
                (f"{label} ({name}) {op} {limit}x rsync", ratio <= limit if op == "<=" else ratio < limit)
            )
    print(
        f"scp -r first copy: {med['first/scp']:.2f}s "
        f"(ranktable/scp {med['first/ranktable'] / med['first/scp']:.2f}x)"
    )
    for text, ok in verdict:
        print(f"target {'met' if ok else 'MISSED'}: {text}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=4, help="interleaved runs per case (median reported)")
    parser.add_argument(
        "--settle",
        type=float,
        default=0.0,
        help=f"seconds from deleting the trees to the first syncs (0; {DELETE_SETTLE_S:g}: past ext4's)",
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ranktable-bench-"))
    server: SshServer | None = None
    try:
        local = work / "src"
        nbytes = make_tree(local, args.files, args.mb)
        server = start_sshd(work / "sshd")
        home = work / "home"
        os.environ["RANKTABLE_HOME"] = str(home)
        known = server.write_known_hosts(home / "known_hosts")
        dests = {name: work / f"dest-{name}" for name in ("ranktable", "cli", "rsync", "scp")}
        for d in dests.values():
            d.mkdir()
        ProfileStore(home).add(server.profile("bench", dests["ranktable"]))
        cli_home = work / "cli-home"  # the CLI's own state (manifest, agent) and destination
        cli, rsync, scp, stop_agent = _peers(server, work, cli_home, local, dests, known)

        def ours() -> None:
            ranktable_sync(home, local)

        print(
            f"tree: {args.files} files, {nbytes / 1e6:.1f} MB; "
            f"sshd on 127.0.0.1:{server.port}; {os.cpu_count()} CPUs; "
            f"{args.repeat} interleaved rounds; load average before: {os.getloadavg()[0]:.1f}"
        )
        times: dict[str, list[float]] = {}

        def note(case: str, seconds: float) -> None:
            times.setdefault(case, []).append(seconds)

        changed = local / "pkg3" / "sub3" / "file3.py"
        first_syncs = [("ranktable", ours), ("cli", cli), ("rsync", rsync), ("scp", scp)]
        for round_no in range(args.repeat):
            for d in dests.values():  # a fresh remote side (and no manifest) for every first sync
                shutil.rmtree(d)
                d.mkdir()
            shutil.rmtree(home / "sync", ignore_errors=True)
            shutil.rmtree(cli_home / "sync", ignore_errors=True)
            if args.settle:
                os.sync()
                time.sleep(args.settle)  # past ext4's window for the deleted inodes (DELETE_SETTLE_S)
            # Fair to each side: the order turns every round (no side always runs right after the
            # deletes), and the disk's pending write-back is flushed before each clock starts.
            shift = round_no % len(first_syncs)
            for name, fn in first_syncs[shift:] + first_syncs[:shift]:
                os.sync()
                note(f"first/{name}", timed(fn))
            for _small in range(2):  # the small cases are cheap: twice per round
                note("noop/ranktable", timed(ours))
                note("noop/cli", timed(cli))
                note("noop/rsync", timed(rsync))
                changed.write_bytes(os.urandom(changed.stat().st_size + 100))
                note("one/ranktable", timed(ours))
                note("one/cli", timed(cli))
                note("one/rsync", timed(rsync))
            for dest in (dests["ranktable"], dests["cli"]):
                same = subprocess.run(["diff", "-r", "-q", str(local), str(dest)], capture_output=True)
                assert same.returncode == 0, same.stdout.decode()[:500]
        _report(times)
        stop_agent()
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
