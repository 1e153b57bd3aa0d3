"""For the browser tests: start a remote kernel on PROFILE and leave it running detached.

That is what a stopping Jupyter server does with its remote kernels (`Ranktable.keep_remote_kernels`): the
kernel keeps running on the instance and its record stays in RANKTABLE_HOME/remote-kernels, so the panel lists
it as "detached" and can attach it. Run with the test server's RANKTABLE_HOME and JUPYTER_DATA_DIR.
Usage: python detached_kernel.py PROFILE REMOTE_PYTHON  -> prints the kernel id.
"""

from __future__ import annotations

import os
import sys


def main(profile: str, python: str) -> str:
    from jupyter_client import KernelManager

    from ranktable.remote import default_manager
    from ranktable.remote.kernel_provisioner import SSHKernelProvisioner
    from ranktable.remote.kernelspec import install_kernelspec

    km = KernelManager(kernel_name=install_kernelspec(profile, python=python))
    km.start_kernel()
    client = km.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
    finally:
        client.stop_channels()
    provisioner = km.provisioner
    assert isinstance(provisioner, SSHKernelProvisioner), type(provisioner)
    provisioner.detach()  # local ends closed, the kernel keeps running on the instance
    default_manager().close()
    return str(km.kernel_id)


if __name__ == "__main__":
    print(main(sys.argv[1], sys.argv[2]), flush=True)
    os._exit(0)  # no interpreter teardown: nothing may shut the detached kernel down
