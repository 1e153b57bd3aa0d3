"""Remote kernels outlive the Jupyter server: detach them when it stops, attach them again when it starts.

A stopping server hands each SSH kernel over instead of shutting it down (``detach_remote_kernels``: the
local ports and the output relay close, the record keeps how far the output was delivered). A starting
server takes every recorded kernel that still runs back into its kernel manager under the same kernel id
(``attach_remote_kernel``) — same local ports, so the browser's kernel connection simply reconnects, and
the output printed meanwhile is replayed. Kernels whose process is gone are forgotten.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from typing import Any

from ranktable.errors import NotFoundError
from ranktable.remote import kernel_remote as remote
from ranktable.remote.kernel_provisioner import SSHKernelProvisioner
from ranktable.remote.kernel_records import KernelRecords

log = logging.getLogger(__name__)


def _provisioner(km: Any) -> SSHKernelProvisioner | None:
    provisioner = getattr(km, "provisioner", None)
    return provisioner if isinstance(provisioner, SSHKernelProvisioner) else None


def detach_remote_kernels(kernel_manager: Any) -> list[str]:
    """Take every SSH kernel out of ``kernel_manager`` without stopping it (the server is stopping)."""
    detached = []
    for kernel_id in list(kernel_manager.list_kernel_ids()):
        km = kernel_manager.get_kernel(kernel_id)
        provisioner = _provisioner(km)
        if provisioner is None:
            continue
        if hasattr(km, "stop_restarter"):
            km.stop_restarter()
        provisioner.detach()
        kernel_manager.remove_kernel(kernel_id)
        detached.append(kernel_id)
    return detached


async def attach_remote_kernel(kernel_manager: Any, record: dict[str, Any]) -> bool:
    """Put a recorded, still running remote kernel back into ``kernel_manager``; False if it is gone."""
    from jupyter_client.provisioning import KernelProvisionerFactory

    kernel_id = str(record["kernel_id"])
    if kernel_id in kernel_manager:
        return True
    info = record["provisioner"]
    km = kernel_manager.kernel_manager_factory(
        parent=kernel_manager,
        log=kernel_manager.log,
        kernel_name=record.get("kernel_name") or "",
        connection_file=f"{kernel_manager.connection_dir}/kernel-{kernel_id}.json",
    )
    km.kernel_id = kernel_id
    km.load_connection_info(info["connection_info"])
    km.provisioner = KernelProvisionerFactory.instance(
        parent=kernel_manager.parent
    ).create_provisioner_instance(kernel_id, km.kernel_spec, parent=km)
    provisioner = _provisioner(km)
    assert provisioner is not None, "the kernelspec no longer names the SSH provisioner"
    await provisioner.load_provisioner_info(info)
    if await provisioner.poll() is not None:  # the kernel exited while no server watched it
        await provisioner.cleanup(restart=False)
        return False
    if provisioner._relay is not None:  # replay only once a client (not just the server's watcher) listens
        provisioner._relay.min_subscribers = 2
    km.write_connection_file()
    if not km.ready.done():
        km.ready.set_result(None)
    # Started (by an earlier server): a later shutdown or restart then gets a fresh `ready` future instead
    # of failing on this finished one (InvalidStateError), which left the kernel listed forever.
    km._attempted_start = True
    kernel_manager._kernels[kernel_id] = km
    if hasattr(kernel_manager, "_kernel_connections"):  # jupyter_server's MappingKernelManager
        kernel_manager._kernel_connections[kernel_id] = 0
        kernel_manager._kernel_ports[kernel_id] = km.ports
        # "busy" until its status comes through: Jupyter then skips its kernel_info "nudge", whose
        # handler would swallow the first replayed messages instead of passing them to the client.
        km.execution_state = "busy"
        km.reason = ""
        from jupyter_server._tz import utcnow

        km.last_activity = utcnow()
        kernel_manager.start_watching_activity(kernel_id)
        kernel_manager.add_restart_callback(
            kernel_id, lambda: kernel_manager._handle_kernel_died(kernel_id), "dead"
        )
        # A client's websocket waits for the kernel's kernel_info reply, asked on the shell channel, which
        # a kernel busy in a long cell answers only when the cell ends (a 60 s cell: the browser saw
        # nothing, and a 20 s connect timeout failed). Ask once on the control channel instead, answered
        # at once even while busy; Jupyter reuses the answer for every websocket to this kernel.
        answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        km._kernel_info_future = answer
        task = asyncio.ensure_future(_fill_kernel_info(km, answer))
        _pending_tasks.add(task)
        task.add_done_callback(_pending_tasks.discard)
    if hasattr(km, "start_restarter"):
        km.start_restarter()
    log.info("ranktable: re-attached remote kernel %s (profile %s)", kernel_id, provisioner.profile)
    return True


_pending_tasks: set[asyncio.Future[None]] = set()  # strong references until each task ends
KERNEL_INFO_SECONDS = 10.0


async def kernel_info_over_control(km: Any, timeout: float = KERNEL_INFO_SECONDS) -> dict[str, Any]:
    """The kernel's kernel_info reply, asked on its control channel; ``{}`` if none comes in time
    (Jupyter then assumes the current protocol, as after its own timeout)."""
    import zmq
    import zmq.asyncio

    socket = km.connect_control()
    try:
        km.session.send(socket, "kernel_info_request")
        if isinstance(socket, zmq.asyncio.Socket):
            raw = await asyncio.wait_for(socket.recv_multipart(), timeout)
        else:
            if not await asyncio.to_thread(socket.poll, int(timeout * 1000)):
                return {}
            raw = socket.recv_multipart(zmq.NOBLOCK)
        _idents, parts = km.session.feed_identities(raw)
        msg = km.session.deserialize(parts)
        content = msg.get("content") or {}
        ok = msg.get("msg_type") == "kernel_info_reply" and "protocol_version" in content
        return dict(content) if ok else {}
    except Exception as exc:  # no answer is no worse than Jupyter's own timeout
        log.info("ranktable: no kernel_info over the control channel: %s", exc)
        return {}
    finally:
        socket.close(linger=0)


async def _fill_kernel_info(km: Any, answer: asyncio.Future[dict[str, Any]]) -> None:
    info = await kernel_info_over_control(km)
    if not answer.done():
        answer.set_result(info)


async def attach_recorded_kernels(kernel_manager: Any, records: KernelRecords | None = None) -> list[str]:
    """At server start: attach every recorded remote kernel that still runs; forget the others."""
    records = records or KernelRecords()
    attached = []
    for record in records.all():
        try:
            if await attach_remote_kernel(kernel_manager, record):
                attached.append(str(record["kernel_id"]))
            else:
                records.remove(str(record["kernel_id"]))
        except Exception as exc:  # unreachable instance, deleted kernelspec: listed, attachable later
            log.warning("ranktable: cannot re-attach remote kernel %s: %s", record.get("kernel_id"), exc)
    return attached


def list_remote_kernels(kernel_manager: Any, records: KernelRecords | None = None) -> list[dict[str, Any]]:
    """Recorded remote kernels, attached to this server or not (the panel's list)."""
    rows = []
    for record in (records or KernelRecords()).all():
        info = record.get("provisioner") or {}
        rows.append(
            {
                "kernel_id": record["kernel_id"],
                "kernel_name": record.get("kernel_name", ""),
                "profile": record.get("profile") or info.get("profile"),
                "pid": info.get("pid"),
                "started": record.get("started"),
                "attached": record["kernel_id"] in kernel_manager,
            }
        )
    return rows


async def shutdown_remote_kernel(
    kernel_manager: Any, kernel_id: str, records: KernelRecords | None = None
) -> None:
    """Shut a remote kernel down, attached or not (a kernel left behind by another server too)."""
    records = records or KernelRecords()
    if kernel_id in kernel_manager:
        await kernel_manager.shutdown_kernel(kernel_id, now=False)
        records.remove(kernel_id)
        return
    record = records.load(kernel_id)
    if record is None:
        raise NotFoundError(f"no remote kernel {kernel_id!r}", where="kernel", fix="list the remote kernels")
    provisioner = SSHKernelProvisioner(kernel_id=kernel_id, kernel_spec=None)
    await provisioner.load_provisioner_info(record["provisioner"])
    pgid = provisioner.pid
    if pgid is not None:
        await asyncio.to_thread(remote.signal_group, provisioner._run_sync, pgid, signal.SIGTERM)
    await provisioner.cleanup(restart=False)  # kills what is left of the group, removes its files
    records.remove(kernel_id)
