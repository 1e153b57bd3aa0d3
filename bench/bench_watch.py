"""Watch-mode benchmark on a large tree: how soon a saved file is in place on the instance, how soon a
renamed folder is, and how much memory the watcher and uploader use. Real OpenSSH sshd on this machine.

A tree of 50,000 small files in 500 folders (one of them holding 5,000 files). ``ranktable sync --watch``'s
machinery (``AutoUploader`` in ``always`` mode with the CLI's debounce, watchdog, incremental syncs):
* save latency: a file is rewritten, the clock runs until the remote copy has the new content
  (p50 / p95 / max over ``--saves`` saves, one at a time); target p95 < 1 s;
* folder rename: the 5,000-file folder is renamed, until all 5,000 files are in place under the new
  name remotely; target < 2 s;
* memory: peak RSS of the process (tree generation included) and RSS growth while watching.

    .venv/bin/python bench/bench_watch.py [--files 50000] [--saves 30]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ranktable.cli.remote import WATCH_DEBOUNCE  # noqa: E402
from ranktable.remote import ConnectionManager, ProfileStore  # noqa: E402
from ranktable.remote.autoupload import AutoUploader  # noqa: E402
from ranktable.remote.sync import Syncer  # noqa: E402
from tests.integration.fixtures.sshd import SshServer, start_sshd  # noqa: E402

BIG_FOLDER = "big"
BIG_FILES = 5000


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def make_tree(root: Path, files: int) -> None:
    rng = random.Random(3)
    for i in range(BIG_FILES):
        path = root / BIG_FOLDER / f"f{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(rng.randbytes(rng.randint(50, 400)))
    for i in range(files - BIG_FILES):
        path = root / f"pkg{i % 499}" / f"m{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(rng.randbytes(rng.randint(50, 400)))


def wait_for(check: object, timeout: float = 60.0) -> float:
    start = time.perf_counter()
    while not check():  # type: ignore[operator]
        if time.perf_counter() - start > timeout:
            raise TimeoutError("not in place within 60 s")
        time.sleep(0.005)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=50_000)
    parser.add_argument("--saves", type=int, default=30)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ranktable-bench-watch-"))
    server: SshServer | None = None
    manager: ConnectionManager | None = None
    uploader: AutoUploader | None = None
    try:
        local, remote = work / "src", work / "dest"
        remote.mkdir()
        started = time.perf_counter()
        make_tree(local, args.files)
        print(f"tree: {args.files} files in {time.perf_counter() - started:.1f}s; {os.cpu_count()} CPUs; "
              f"load average before: {os.getloadavg()[0]:.1f}")  # fmt: skip
        server = start_sshd(work / "sshd")
        home = work / "home"
        os.environ["RANKTABLE_HOME"] = str(home)
        server.write_known_hosts(home / "known_hosts")
        ProfileStore(home).add(server.profile("bench", remote))
        manager = ConnectionManager(ProfileStore(home))
        syncer = Syncer(manager.get("bench"), local)
        first = syncer.sync()
        print(f"first sync: {len(first.uploaded)} files in {first.seconds:.2f}s")
        rss_before = rss_mb()
        results: list[object] = []
        uploader = AutoUploader(
            syncer, "always", debounce=WATCH_DEBOUNCE, on_result=lambda r, e: results.append(r or e)
        ).start(watch=True)
        time.sleep(1.0)  # the watcher's inotify watches are set up

        rng = random.Random(5)
        latencies = []
        for n in range(args.saves):
            rel = f"pkg{rng.randrange(499)}/m{rng.randrange(args.files - BIG_FILES)}.py"
            rel = rel if (local / rel).exists() else f"{BIG_FOLDER}/f{n}.py"
            content = f"# save {n} {time.time()}\n".encode()
            (local / rel).write_bytes(content)
            latencies.append(
                wait_for(lambda r=rel, c=content: (remote / r).exists() and (remote / r).read_bytes() == c)
            )
            time.sleep(0.2)
        latencies.sort()
        p95 = latencies[min(len(latencies) - 1, round(0.95 * len(latencies)) - 1)]
        print(
            f"save -> in place remotely ({len(latencies)} saves, debounce {WATCH_DEBOUNCE}s): "
            f"p50 {statistics.median(latencies):.2f}s, p95 {p95:.2f}s, max {latencies[-1]:.2f}s"
        )

        time.sleep(0.5)
        os.rename(local / BIG_FOLDER, local / f"{BIG_FOLDER}-renamed")
        target = remote / f"{BIG_FOLDER}-renamed"
        rename = wait_for(lambda: target.is_dir() and len(os.listdir(target)) >= BIG_FILES)
        print(f"rename of a {BIG_FILES}-file folder -> all in place remotely: {rename:.2f}s")
        time.sleep(1.0)  # the sync that applied it has returned
        how = [getattr(r, "summary", lambda r=r: repr(r))() for r in results[-2:]]
        print("  applied by: " + " | ".join(how))
        rss_after = rss_mb()
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3
        print(
            f"memory: RSS {rss_before:.0f} MB before watching, {rss_after:.0f} MB after; peak {peak:.0f} MB"
        )
        print(f"load average after: {os.getloadavg()[0]:.1f}")
        for text, ok in (
            ("save p95 < 1 s", p95 < 1.0),
            (f"{BIG_FILES}-file folder rename < 2 s", rename < 2.0),
        ):
            print(f"target {'met' if ok else 'MISSED'}: {text}")
    finally:
        if uploader is not None:
            uploader.stop()
        if manager is not None:
            manager.close()
        if server is not None:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
