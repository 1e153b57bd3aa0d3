"""Remote kernel over a real local sshd: start-to-ready, execute round trip, interrupt, shutdown, and the
port forwarder's throughput (one and four parallel streams) — the same code JupyterLab goes through.

Run: .venv/bin/python bench/bench_kernel.py
"""

from __future__ import annotations

import os
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.integration.fixtures.sshd import start_sshd

MB = 1 << 20


def sink_server() -> tuple[socket.socket, int]:
    """Reads everything it is sent, then answers with the byte count (so the sender knows it arrived)."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve(conn: socket.socket) -> None:
        with conn:
            total = 0
            while data := conn.recv(1 << 16):
                total += len(data)
            conn.sendall(str(total).encode())

    def accept() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return server, server.getsockname()[1]


def push(port: int, size: int) -> None:
    block = os.urandom(1 << 16)
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sent = 0
        while sent < size:
            sock.sendall(block)
            sent += len(block)
        sock.shutdown(socket.SHUT_WR)
        assert int(sock.recv(64)) == sent


def throughput(port: int, streams: int, size: int) -> float:
    threads = [threading.Thread(target=push, args=(port, size)) for _ in range(streams)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return streams * size / MB / (time.monotonic() - start)


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-kernel-"))
    os.environ.update(
        RANKTABLE_HOME=str(work / "home"),
        RANKTABLE_USER_KNOWN_HOSTS=str(work / "none"),
        RANKTABLE_SSH_CONFIG=str(work / "none"),
        JUPYTER_DATA_DIR=str(work / "jupyter"),
        JUPYTER_PATH=str(work / "jupyter"),
        JUPYTER_RUNTIME_DIR=str(work / "runtime"),
    )
    server = start_sshd(work / "sshd")
    try:
        from jupyter_client import KernelManager

        from ranktable.remote.kernel_link import open_link
        from ranktable.remote.kernel_tunnel import PortForwarder
        from ranktable.remote.kernelspec import install_kernelspec
        from ranktable.remote.profiles import ProfileStore

        server.write_known_hosts(work / "home" / "known_hosts")
        ProfileStore().add(server.profile("bench", work / "remote"))
        name = install_kernelspec("bench", python=sys.executable)
        starts, shutdowns = [], []
        for _ in range(3):
            t0 = time.monotonic()
            km = KernelManager(kernel_name=name)
            km.start_kernel()
            kc = km.client()
            kc.start_channels()
            kc.wait_for_ready(timeout=60)
            starts.append(time.monotonic() - t0)
            rtts = []
            for _ in range(30):
                t1 = time.monotonic()
                kc.execute_interactive("1 + 1", timeout=30, output_hook=lambda m: None)
                rtts.append(time.monotonic() - t1)
            kc.execute("import time; time.sleep(60)")
            time.sleep(0.5)
            t2 = time.monotonic()
            km.interrupt_kernel()
            while kc.get_shell_msg(timeout=30)["msg_type"] != "execute_reply":
                pass
            interrupt = time.monotonic() - t2
            kc.stop_channels()
            t3 = time.monotonic()
            km.shutdown_kernel()
            shutdowns.append(time.monotonic() - t3)
        print(f"kernel start to ready      median {statistics.median(starts):.2f} s  (3 runs)")
        print(f"execute '1 + 1' round trip median {statistics.median(rtts) * 1000:.1f} ms (30 runs)")
        print(f"interrupt time.sleep(60)   {interrupt:.2f} s")
        print(f"graceful shutdown          median {statistics.median(shutdowns):.2f} s")

        sink, sink_port = sink_server()
        forwarder = PortForwarder(open_link("bench").open_forward)
        forwarder.start()
        port = forwarder.listen()
        forwarder.point(port, ("127.0.0.1", sink_port))
        direct = throughput(sink_port, 1, 200 * MB)
        one = throughput(port, 1, 100 * MB)
        four = throughput(port, 4, 25 * MB)
        print(f"forwarder throughput       1 stream {one:.0f} MB/s, 4 streams {four:.0f} MB/s total")
        print(f"(plain loopback, no SSH    {direct:.0f} MB/s)")
        forwarder.close()
        sink.close()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
