"""The server extension: routes under `/ranktable/`, the shared services object, clean shutdown."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from jupyter_server.extension.application import ExtensionApp

from ranktable.home import export_shared_settings
from ranktable.server_ext.config import Ranktable
from ranktable.server_ext.routes import ROUTES
from ranktable.server_ext.services import Services


def share_state_dir(state_dir: str) -> None:
    """One state root: `c.Ranktable.state_dir` becomes RANKTABLE_HOME for this process and its children,
    so forwards, remote-kernel records and host keys live there too, and the CLI in JupyterLab's
    terminals and the kernels see the profiles the panel added."""
    if state_dir:
        os.environ["RANKTABLE_HOME"] = str(Path(state_dir).expanduser().resolve())


class RanktableApp(ExtensionApp):
    """Loaded by Jupyter Server (`jpserver_extensions: {"ranktable": true}`)."""

    name = "ranktable"
    load_other_extensions = True

    def initialize_settings(self) -> None:
        from ranktable.arenas import limit_arenas

        limit_arenas()  # before the per-pod log readers start: their memory in 2 arenas, not 16 (#28)
        # Import the cluster client once here, on the server's own thread, before the panel's first
        # requests arrive together on the executor's threads.
        from ranktable.usecases.jobs import preload_cluster_client

        preload_cluster_client()

        serverapp = self.serverapp
        assert serverapp is not None  # set by the extension manager before initialize_settings
        config = Ranktable(parent=serverapp, config=serverapp.config)
        share_state_dir(config.state_dir)
        root_dir = getattr(serverapp, "root_dir", ".")
        base_url = str(getattr(serverapp, "base_url", "/") or "/")
        self.services = Services(config, root_dir=root_dir, log=self.log, base_url=base_url)
        self.settings["ranktable_services"] = self.services
        self._hook_contents_manager()
        self._hook_kernel_env(config)
        self.services.jobs.start_auto_resume()  # `c.Ranktable.auto_resume`: its thread, else nothing

    def initialize_handlers(self) -> None:
        self.handlers.extend(ROUTES)

    def _hook_contents_manager(self) -> None:
        """Automatic upload: chain the SSH layer's post_save_hook (it only enqueues) after any other."""
        contents = getattr(self.serverapp, "contents_manager", None)
        if contents is None or not hasattr(contents, "post_save_hook"):
            return
        hook = self.services.post_save_hook()
        if hook is None:
            return
        previous = contents.post_save_hook

        def chained(
            model: Any = None, os_path: str = "", contents_manager: Any = None, **kwargs: Any
        ) -> None:
            if previous is not None:
                previous(model=model, os_path=os_path, contents_manager=contents_manager, **kwargs)
            hook(model=model, os_path=os_path, contents_manager=contents_manager, **kwargs)

        contents.post_save_hook = chained

    def _hook_kernel_env(self, config: Ranktable) -> None:
        """Kernels started from here (local and remote) get this server's cluster settings in their
        environment, so `%ranktable jobs` sees the panel's cluster; this process's own stays as it is."""
        exports: dict[str, str] = {}  # (the state folder is RANKTABLE_HOME already: share_state_dir)
        settings = {"kubeconfig": config.kubeconfig, "context": config.context}
        export_shared_settings({**settings, "namespace": self.services.jobs.namespace}, exports)
        kernels = getattr(self.serverapp, "kernel_manager", None)
        if kernels is None or not exports:
            return
        start = kernels.start_kernel

        async def start_kernel(*args: Any, **kwargs: Any) -> Any:
            kwargs["env"] = {**(kwargs.get("env") or os.environ), **exports}
            return await start(*args, **kwargs)

        kernels.start_kernel = start_kernel

    async def _start_jupyter_server_extension(self, serverapp: Any) -> None:
        """Re-attach the remote kernels a previous server left running (they kept their output)."""
        if self.services.config.keep_remote_kernels:
            await self.services.remote.usecases.attach_recorded_kernels(serverapp.kernel_manager)

    async def stop_extension(self) -> None:
        """Stop watches, log follows, syncs and the auto-uploader so shutdown leaves nothing running.

        Runs before Jupyter shuts its kernels down: remote kernels are detached first, so they survive."""
        services = getattr(self, "services", None)
        if services is not None:
            kernel_manager = getattr(self.serverapp, "kernel_manager", None)
            if services.config.keep_remote_kernels and kernel_manager is not None:
                services.remote.usecases.detach_kernels(kernel_manager)
            await services.close()
