"""Kernel output that survives disconnects: a bounded IOPub log on the instance, replayed in order, once.

* Remote: a *recorder* process (forked by the kernel's launcher, same process group, SIGINT ignored)
  subscribes to the kernel's IOPub socket on the instance's loopback and appends every message, as
  raw signed ZMQ frames with a sequence number, to ``kernel-<id>.iopub``. The log is bounded: past
  ``cap`` bytes it is rotated to ``.iopub.1`` (so at most two files of ``cap`` bytes are kept).
* Local: ``IopubRelay`` binds the kernel's local IOPub port (a ZMQ PUB socket on 127.0.0.1) and feeds
  it from a *follower* exec channel that streams the log from the last sequence number it delivered.
  After a dropped connection, a sleep or a Jupyter server restart the follower restarts from there, so
  what was published meanwhile reaches the clients in order, exactly once (the frames keep the kernel's
  HMAC signatures: clients verify them as usual).
"""

from __future__ import annotations

import contextlib
import logging
import shlex
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import zmq

log = logging.getLogger(__name__)

RECORD = struct.Struct(">QII")  # sequence number, frame count, body size; then per frame: >I size + bytes
FRAME = struct.Struct(">I")
DEFAULT_CAP = 16 << 20  # bytes per log file (two are kept)
RETRY_SECONDS = 0.5

# Runs on the instance as a child of the kernel (its parent pid is the kernel's): exits with it. With three
# more arguments it also keeps the kernel's shell replies (#26.2): it listens on a loopback port of its own
# (the local side's shell requests come there through the SSH forward), passes each request to the kernel
# through a DEALER per client whose identity is the client's (so the kernel's stdin requests still reach
# the client's own stdin socket), and appends every reply, prefixed with the client's identity, to a log
# like the IOPub one: the local side replays it from the last reply delivered, so a reply sent while SSH
# is down arrives after the reconnect, once.
RECORDER = r"""
import os, signal, struct, sys, zmq
signal.signal(signal.SIGINT, signal.SIG_IGN)
path, port, cap, kernel = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), os.getppid()
RECORD, FRAME = struct.Struct(">QII"), struct.Struct(">I")
def last_seq(name):
    seq = 0
    try:
        with open(name, "rb") as fh:
            while True:
                head = fh.read(16)
                if len(head) < 16:
                    return seq
                s, _, size = RECORD.unpack(head)
                if len(fh.read(size)) < size:
                    return seq
                seq = s
    except FileNotFoundError:
        return seq
class Log:
    def __init__(self, name):
        self.name, self.seq = name, last_seq(name) or last_seq(name + ".1")
        self.fh = open(name, "ab")
    def append(self, frames):
        self.seq += 1
        body = b"".join(FRAME.pack(len(f)) + f for f in frames)
        self.fh.write(RECORD.pack(self.seq, len(frames), len(body)) + body)
        self.fh.flush()
        if self.fh.tell() > cap:
            self.fh.close()
            os.replace(self.name, self.name + ".1")
            self.fh = open(self.name, "ab")
context = zmq.Context()
poller = zmq.Poller()
sub = context.socket(zmq.SUB)
sub.setsockopt(zmq.SUBSCRIBE, b"")
sub.setsockopt(zmq.RCVHWM, 0)
sub.connect("tcp://127.0.0.1:%d" % port)
poller.register(sub, zmq.POLLIN)
iopub = Log(path)
front = None
if len(sys.argv) > 6:
    shell_port, front_port, replies = int(sys.argv[4]), int(sys.argv[5]), Log(sys.argv[6])
    front = context.socket(zmq.ROUTER)
    front.bind("tcp://127.0.0.1:%d" % front_port)
    poller.register(front, zmq.POLLIN)
    dealers, owners = {}, {}
while os.getppid() == kernel:
    for sock, _ in poller.poll(1000):
        if sock is sub:
            iopub.append(sub.recv_multipart())
        elif sock is front:
            frames = front.recv_multipart()  # [relay, client, ...request]
            if len(frames) < 3:
                continue
            client = frames[1]
            dealer = dealers.get(client)
            if dealer is None:
                dealer = dealers[client] = context.socket(zmq.DEALER)
                dealer.setsockopt(zmq.IDENTITY, client if client[:1] != b"\0" else b"r" + client)
                dealer.setsockopt(zmq.LINGER, 0)
                dealer.connect("tcp://127.0.0.1:%d" % shell_port)
                owners[dealer] = client
                poller.register(dealer, zmq.POLLIN)
            dealer.send_multipart(frames[2:])
        else:
            replies.append([owners[sock]] + sock.recv_multipart())
"""

# Streams the log's records with a sequence number above argv[2], then follows it (and its rotation).
# Exits when its channel closes (stdin EOF), so a dropped connection leaves no process behind.
FOLLOWER = r"""
import os, select, struct, sys, time
path, after = sys.argv[1], int(sys.argv[2])
out = sys.stdout.buffer
RECORD = struct.Struct(">QII")
def drain(fh):
    global after
    sent = False
    while True:
        pos = fh.tell()
        head = fh.read(16)
        if len(head) == 16:
            seq, _, size = RECORD.unpack(head)
            body = fh.read(size)
            if len(body) == size:
                if seq > after:
                    out.write(head + body)
                    after, sent = seq, True
                continue
        fh.seek(pos)
        if sent:
            out.flush()
        return
out.write(b"READY\n")
out.flush()
try:
    with open(path + ".1", "rb") as old:
        drain(old)
except FileNotFoundError:
    pass
fh, inode = None, None
while True:
    if fh is None:
        try:
            fh = open(path, "rb")
            inode = os.fstat(fh.fileno()).st_ino
        except FileNotFoundError:
            fh = None
    if fh is not None:
        drain(fh)
        try:
            rotated = os.stat(path).st_ino != inode
        except FileNotFoundError:
            rotated = False
        if rotated:  # finish the old file, then whatever was rotated since (several rotations may
            drain(fh)  # have happened between two looks), then the new file
            fh.close()
            fh = None
            try:
                with open(path + ".1", "rb") as old:
                    drain(old)
            except FileNotFoundError:
                pass
            continue
    if select.select([sys.stdin], [], [], 0.02)[0] and not os.read(sys.stdin.fileno(), 1):
        sys.exit(0)
"""

READY = b"READY\n"


def is_welcome(frames: list[bytes]) -> bool:
    """ipykernel's ``iopub_welcome`` answers the recorder's own subscription: not for clients."""
    for index, frame in enumerate(frames):
        if frame == b"<IDS|MSG>" and len(frames) > index + 2:
            return b'"iopub_welcome"' in frames[index + 2]
    return False


def parse_records(buffer: bytearray) -> list[tuple[int, list[bytes]]]:
    """Complete records at the start of ``buffer`` (removed from it); a partial one stays."""
    found: list[tuple[int, list[bytes]]] = []
    offset = 0
    while len(buffer) - offset >= RECORD.size:
        seq, count, size = RECORD.unpack_from(buffer, offset)
        end = offset + RECORD.size + size
        if len(buffer) < end:
            break
        frames, pos = [], offset + RECORD.size
        for _ in range(count):
            (length,) = FRAME.unpack_from(buffer, pos)
            frames.append(bytes(buffer[pos + FRAME.size : pos + FRAME.size + length]))
            pos += FRAME.size + length
        found.append((seq, frames))
        offset = end
    del buffer[:offset]
    return found


@dataclass
class RemoteLog:
    """A remote message log a relay follows: opened through `open_session`, read by `python` at `path`
    from sequence `after` on; `on_progress` hears each sequence delivered; `name` names the threads."""

    open_session: Callable[[], Any]
    python: str
    path: str
    after: int = 0
    on_progress: Callable[[int], None] | None = None
    name: str = "ranktable-iopub"


class IopubRelay:
    """The local IOPub port: publishes the remote log's messages from sequence ``after`` on."""

    def __init__(self, log: RemoteLog, *, port: int = 0) -> None:
        self._follow_log(log)
        # XPUB: it tells us when clients subscribe. A PUB socket drops what it publishes before a
        # client's subscription arrives, so the log is only replayed while someone listens.
        self._socket = self._context.socket(zmq.XPUB)
        self._socket.setsockopt(zmq.XPUB_VERBOSER, 1)  # every (un)subscription, not just the first/last
        self.port = self._bind_local(self._socket, port)
        self._thread: threading.Thread | None = None
        self.connected = threading.Event()  # a follower is streaming (tests, status)
        self.subscribers = 0
        self.min_subscribers = 1  # a Jupyter server's own activity watcher is one: it sets 2

    def _follow_log(self, log: RemoteLog) -> None:
        """What a relay follows: the remote log at `log.path` (read by `log.python`) from `log.after`."""
        self._log = log
        self.log_path = log.path  # set once the kernel's files are known
        self.after = log.after  # moves on with each message delivered
        self._stop = threading.Event()
        self._lease: Any = None
        self._context: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()

    @staticmethod
    def _bind_local(socket: zmq.Socket[bytes], port: int) -> int:
        """Bind `socket` on 127.0.0.1 (`port`, or a free one: 0), never dropping or lingering; the port."""
        socket.setsockopt(zmq.LINGER, 0)
        socket.setsockopt(zmq.SNDHWM, 0)  # never drop: the log is the bound, not the socket
        if port:
            socket.bind(f"tcp://127.0.0.1:{port}")
            return port
        return socket.bind_to_random_port("tcp://127.0.0.1")

    def _count_subscriptions(self, timeout_ms: int = 0) -> None:
        while self._socket.poll(timeout_ms, zmq.POLLIN):
            message = self._socket.recv()
            if message[:1] == b"\x01":
                self.subscribers += 1
            elif message[:1] == b"\x00":
                self.subscribers = max(0, self.subscribers - 1)
            timeout_ms = 0

    def _listened_to(self) -> bool:
        self._count_subscriptions()
        return self.subscribers >= self.min_subscribers

    def start(self) -> IopubRelay:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=self._log.name, daemon=True)
            self._thread.start()
        return self

    def close(self) -> None:
        self._stop_threads(self._thread)
        self._socket.close(linger=0)

    def _stop_threads(self, *threads: threading.Thread | None) -> None:
        """Stop following (the remote reader's session closed too) and wait a little for `threads`."""
        self._stop.set()
        lease = self._lease
        if lease is not None:
            with contextlib.suppress(Exception):
                lease.close()
        for thread in threads:
            if thread is not None and thread is not threading.current_thread():
                thread.join(5)

    def _run(self) -> None:
        while not self._stop.is_set():
            if not self._listened_to():  # nobody would receive a replay: keep it for later
                self._count_subscriptions(200)
                continue
            try:
                self._follow()
            except Exception as exc:  # dropped connection, instance asleep: retry from self.after
                log.debug("iopub follower for %s ended: %s", self.log_path, exc)
            finally:
                self.connected.clear()
                lease, self._lease = self._lease, None
                if lease is not None:
                    with contextlib.suppress(Exception):
                        lease.close()
            self._stop.wait(RETRY_SECONDS)

    def _follow(self) -> None:
        self._lease = lease = self._log.open_session()
        channel = lease.channel
        channel.settimeout(1.0)
        q = shlex.quote
        python = q(self._log.python)
        channel.exec_command(f"exec {python} -c {q(FOLLOWER)} {q(self.log_path)} {int(self.after)}")
        buffer = bytearray()
        ready = False
        while not self._stop.is_set():
            if not self._listened_to():
                return  # the last client left: resume from ``after`` when one is back
            try:
                data = channel.recv(1 << 16)
            except TimeoutError:
                continue
            if not data:
                return
            buffer += data
            if not ready:
                if len(buffer) < len(READY):
                    continue
                if not buffer.startswith(READY):
                    raise ConnectionError(f"unexpected follower output {bytes(buffer[:200])!r}")
                del buffer[: len(READY)]
                ready = True
                self.connected.set()
            for seq, frames in parse_records(buffer):
                if seq <= self.after:
                    continue
                self._deliver(frames)
                self.after = seq
                if self._log.on_progress is not None:
                    self._log.on_progress(seq)

    def _deliver(self, frames: list[bytes]) -> None:
        if not is_welcome(frames):
            self._socket.send_multipart(frames)


class ShellRelay(IopubRelay):
    """The local shell port, for a kernel whose replies are kept on the instance (#26.2).

    Clients (Jupyter's DEALERs) connect to a ROUTER here; each request goes, with the client's identity,
    to the instance's reply keeper through ``keeper_port`` (a local listener of the SSH forwarder); the
    replies come back from the keeper's log through a follower, like IOPub, from the last one delivered
    (``after``): a reply sent while SSH was down is delivered after the reconnect, exactly once. One
    thread owns the ROUTER and the DEALER; the follower thread hands it records over an inproc pair.
    """

    def __init__(self, log: RemoteLog, *, keeper_port: int, port: int = 0) -> None:
        self._follow_log(log)
        self._router = self._context.socket(zmq.ROUTER)
        self.port = self._bind_local(self._router, port)
        self.keeper_port = keeper_port
        self._dealer = self._context.socket(zmq.DEALER)
        self._dealer.setsockopt(zmq.LINGER, 0)
        self._dealer.connect(f"tcp://127.0.0.1:{keeper_port}")
        inproc = f"inproc://ranktable-shell-{id(self)}"
        self._pull = self._context.socket(zmq.PAIR)
        self._pull.bind(inproc)
        self._push = self._context.socket(zmq.PAIR)
        self._push.connect(inproc)
        self._thread: threading.Thread | None = None
        self._pump_thread: threading.Thread | None = None
        self.connected = threading.Event()
        self.subscribers = 0
        self.min_subscribers = 0

    def _listened_to(self) -> bool:
        return True  # replies are routed to their client; one for a client gone is dropped by the ROUTER

    def _count_subscriptions(self, timeout_ms: int = 0) -> None:
        return

    def _deliver(self, frames: list[bytes]) -> None:
        self._push.send_multipart(frames)  # [client identity, ...reply]

    def start(self) -> ShellRelay:
        if self._pump_thread is None:
            name = f"{self._log.name}-pump"
            self._pump_thread = threading.Thread(target=self._pump, name=name, daemon=True)
            self._pump_thread.start()
        super().start()
        return self

    def _pump(self) -> None:
        poller = zmq.Poller()
        poller.register(self._router, zmq.POLLIN)
        poller.register(self._pull, zmq.POLLIN)
        while not self._stop.is_set():
            try:
                ready = dict(poller.poll(200))
                if self._router in ready:
                    self._dealer.send_multipart(self._router.recv_multipart())  # [client, ...request]
                if self._pull in ready:
                    self._router.send_multipart(self._pull.recv_multipart())
            except zmq.ZMQError:
                if self._stop.is_set():
                    return
                raise

    def close(self) -> None:
        self._stop_threads(self._thread, self._pump_thread)
        for sock in (self._router, self._dealer, self._pull, self._push):
            sock.close(linger=0)


class Throttled:
    """Calls ``fn(value)`` at most every ``interval`` seconds (the last value always, on ``flush``)."""

    def __init__(self, fn: Callable[[int], None], interval: float = 0.5) -> None:
        self._fn = fn
        self._interval = interval
        self._last = 0.0
        self._pending: int | None = None
        self._lock = threading.Lock()

    def __call__(self, value: int) -> None:
        now = time.monotonic()
        with self._lock:
            self._pending = value
            if now - self._last < self._interval:
                return
            self._last = now
        self.flush()

    def flush(self) -> None:
        with self._lock:
            value, self._pending = self._pending, None
            if value is not None:
                self._fn(value)
