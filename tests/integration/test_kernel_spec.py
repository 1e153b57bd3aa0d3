"""`ranktable kernel install` and the provisioner's registration with jupyter_client."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.provisioning import KernelProvisionerFactory

from ranktable.cli import main
from ranktable.errors import InputError
from ranktable.remote.kernel_provisioner import SSHKernelProvisioner
from ranktable.remote.kernelspec import PROVISIONER_NAME, install_kernelspec, kernelspec_dict
from ranktable.remote.profiles import Profile, ProfileStore


@pytest.fixture
def jupyter_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    data = tmp_path / "jupyter-data"
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(data))
    monkeypatch.setenv("JUPYTER_PATH", str(data))
    monkeypatch.setenv("RANKTABLE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("RANKTABLE_SSH_CONFIG", str(tmp_path / "no-ssh-config"))
    return data


def test_install_writes_a_spec_kernelspecmanager_lists(jupyter_dirs: Path) -> None:
    name = install_kernelspec("gpu-box", python="/opt/conda/bin/python")
    assert name == "ranktable-gpu-box"
    specs = KernelSpecManager().get_all_specs()
    assert name in specs
    spec = specs[name]["spec"]
    assert spec["display_name"] == "Python (gpu-box)"
    assert spec["language"] == "python"
    assert spec["interrupt_mode"] == "signal"
    assert spec["argv"][-4:] == ["-m", "ipykernel_launcher", "-f", "{connection_file}"]
    assert spec["metadata"]["kernel_provisioner"] == {
        "provisioner_name": PROVISIONER_NAME,
        "config": {"profile": "gpu-box", "python": "/opt/conda/bin/python"},
    }
    assert Path(specs[name]["resource_dir"]).is_relative_to(jupyter_dirs)
    # jupyter_client resolves the provisioner named in the spec to our class
    kernel_spec = KernelSpecManager().get_kernel_spec(name)
    factory = KernelProvisionerFactory.instance()
    assert factory.is_provisioner_available(kernel_spec)
    provisioner = factory.create_provisioner_instance("k1", kernel_spec, parent=None)
    assert isinstance(provisioner, SSHKernelProvisioner)
    assert (provisioner.profile, provisioner.python) == ("gpu-box", "/opt/conda/bin/python")


def test_reinstall_replaces_the_spec(jupyter_dirs: Path) -> None:
    install_kernelspec("box")
    install_kernelspec("box", python="python3.9", display_name="Box (py3.9)")
    spec = KernelSpecManager().get_kernel_spec("ranktable-box")
    assert spec.display_name == "Box (py3.9)"
    assert spec.metadata["kernel_provisioner"]["config"]["python"] == "python3.9"


def test_bad_names_are_refused(jupyter_dirs: Path) -> None:
    with pytest.raises(InputError, match="NAME"):
        kernelspec_dict("../etc")
    with pytest.raises(InputError, match="--python"):
        kernelspec_dict("box", python=" ")


def test_cli_install_needs_an_existing_profile(
    jupyter_dirs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["kernel", "install", "nobox"]) == 1
    err = capsys.readouterr().err
    assert "no SSH profile named 'nobox'" in err and "ranktable ssh add nobox" in err
    ProfileStore().add(Profile(name="box", host="example.invalid"))
    assert main(["kernel", "install", "box", "--python", "/usr/bin/python3"]) == 0
    assert "ranktable-box" in capsys.readouterr().out
    kernel = json.loads((jupyter_dirs / "kernels" / "ranktable-box" / "kernel.json").read_text())
    assert kernel["metadata"]["kernel_provisioner"]["config"] == {
        "profile": "box",
        "python": "/usr/bin/python3",
    }


def test_jupyter_lists_the_provisioner() -> None:
    jupyter = Path(sys.executable).parent / "jupyter"
    out = subprocess.run(
        [str(jupyter), "kernelspec", "provisioners"], capture_output=True, text=True, check=True
    )
    line = next(line for line in out.stdout.splitlines() if PROVISIONER_NAME in line)
    assert "ranktable.remote.kernel_provisioner:SSHKernelProvisioner" in line
