"""`%load_ext ranktable` in a real IPython shell: the magics against the simulated pool and a real sshd."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from tests.integration.fixtures.simpool import SimPoolHandle
from tests.integration.fixtures.sshd import SshdProfile

TRAIN = str(Path(__file__).resolve().parents[2] / "examples" / "train.py")
COMMAND = "for i in 1 2 3; do echo step $i; sleep 0.2; done; sleep 60"


@pytest.fixture
def ip() -> Iterator[InteractiveShell]:
    shell = InteractiveShell.instance()
    shell.extension_manager.load_extension("ranktable")
    yield shell
    shell.extension_manager.unload_extension("ranktable")
    InteractiveShell.clear_instance()


def magics(ip: InteractiveShell) -> Any:
    return ip.magics_manager.registry["RanktableMagics"]


def test_help_and_bad_usage_are_one_line(ip: InteractiveShell, capsys: pytest.CaptureFixture[str]) -> None:
    ip.run_line_magic("ranktable", "help")
    assert "%%ranktable job" in capsys.readouterr().out
    with pytest.raises(UsageError, match="unknown subcommand"):
        ip.run_line_magic("ranktable", "frobnicate")
    with pytest.raises(UsageError, match="only `%%ranktable job` is a cell magic"):
        ip.run_cell_magic("ranktable", "jobs", "x")
    with pytest.raises(UsageError, match="the following arguments are required: name"):
        ip.run_line_magic("ranktable", "stop")


def test_job_cell_shows_validation_and_yaml_without_a_cluster(
    ip: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    out = ip.run_cell_magic(
        "ranktable", "job --name bert --image bert:v1 --nodes 4 --npus 4 --no-layout", "python train.py"
    )
    errors = {i["field"].removeprefix("spec.") for i in out["issues"] if i["severity"] == "error"}
    assert "npus_per_node" in errors
    # `python SCRIPT ARGS` runs through the in-container launcher, its arguments split as a shell does
    assert out["spec"]["command"] == [] and out["spec"]["entry"]["script"] == "train.py"
    assert "- ranktable\n" in out["yaml"] and "- launch\n" in out["yaml"]
    assert "kind: Job" in out["yaml"]
    quoted = ip.run_cell_magic(
        "ranktable",
        "job --name bert --image bert:v1 --no-layout",
        "# train\npython3.9 /work/train.py --steps 300 --tag 'a b'  # ten minutes\n",
    )
    assert quoted["spec"]["entry"] == {
        "script": "/work/train.py",
        "args": ["--steps", "300", "--tag", "a b"],
        "master_port": 29500,
        "python": "python3.9",
    }
    # anything else runs with bash once per pod, and says so
    shell = ip.run_cell_magic("ranktable", "job --name bert --image bert:v1 --no-layout", "cd /w && ./run.sh")
    assert shell["spec"]["command"] == ["/bin/bash", "-c", "cd /w && ./run.sh"]
    assert [i["field"] for i in shell["issues"] if i["severity"] == "warning"][:1] == ["cell"]
    with pytest.raises(UsageError, match="needs --name and --image"):
        ip.run_cell_magic("ranktable", "job --nodes 2", "true")


def test_job_cell_runs_through_the_launcher_on_the_pool(
    ip: InteractiveShell, sim_pool: SimPoolHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's `%%ranktable job ... python train.py`: every process gets its own rank (#24.5); with
    bash each printed "rank 0/1"."""
    monkeypatch.setenv("RANKTABLE_HOME", str(tmp_path / "home"))
    ip.run_line_magic("ranktable", f"cluster --kubeconfig {sim_pool.kubeconfig} --context {sim_pool.context}")
    out = ip.run_cell_magic(
        "ranktable", "job --name cell --image i --nodes 2 --submit --no-layout", f"python {TRAIN} --steps 2"
    )
    assert out["submitted"]["name"] == "cell" and not [i for i in out["issues"] if i["field"] == "cell"]
    ip.run_line_magic("ranktable", "wait cell --timeout 60")
    deadline = time.monotonic() + 60
    ranks: set[str] = set()
    while len(ranks) < 16:
        assert time.monotonic() < deadline, ranks
        lines = ip.run_line_magic("ranktable", "logs cell")
        # "[node-rank pod] [rankN]: rank N/16 server ..." (the launcher tags each process's lines)
        ranks = {m.group(1) for line in lines if (m := re.search(r"\brank (\d+/\d+) server ", line))}
        time.sleep(0.5)
    assert ranks == {f"{r}/16" for r in range(16)}


def test_a_magic_shows_one_rich_output_never_a_raw_dict(
    ip: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    """The result is the one output: HTML in a notebook, a one-line summary in a terminal."""
    from IPython.utils.capture import capture_output

    with capture_output(stdout=False, stderr=False, display=True) as shown:
        ip.run_cell(
            "%%ranktable job --name bert --image bert:v1 --nodes 4 --npus 4 --no-layout\npython train.py"
        )
    assert shown.outputs == []  # nothing displayed besides the result
    out = capsys.readouterr().out
    assert out.count("Out[") == 1 and "bert: " in out and "{'spec'" not in out
    result = ip.user_ns["_"]
    assert "kind: Job" in result._repr_html_() and "npus_per_node" in result._repr_html_()
    assert result["spec"]["name"] == "bert"  # still the data


def test_submit_list_logs_layout_and_stop_on_the_simulated_pool(
    ip: InteractiveShell,
    sim_pool: SimPoolHandle,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RANKTABLE_HOME", str(tmp_path / "home"))  # where `stop` archives the run's logs
    ip.run_line_magic("ranktable", f"cluster --kubeconfig {sim_pool.kubeconfig} --context {sim_pool.context}")
    out = ip.run_cell_magic("ranktable", "job --name mag4 --image bert:v1 --nodes 4 --submit", COMMAND)
    assert out["submitted"]["name"] == "mag4"
    assert out["layout"]["servers"] == 4  # the planned layout preview on the pool's topology
    with pytest.raises(UsageError, match="already exists"):
        ip.run_cell_magic(
            "ranktable", "job --name mag4 --image bert:v1 --nodes 4 --submit --no-layout", COMMAND
        )

    waited = ip.run_line_magic("ranktable", "wait mag4 --timeout 60")
    assert waited["report"]["status"] == "valid"
    jobs = ip.run_line_magic("ranktable", "jobs")
    assert [j["name"] for j in jobs] == ["mag4"]
    deadline = time.monotonic() + 30
    lines: list[str] = []
    while sum("step 3" in line for line in lines) < 4:
        assert time.monotonic() < deadline
        lines = ip.run_line_magic("ranktable", "logs mag4")
        time.sleep(0.5)
    ranks = {line.split()[0] for line in lines if line.endswith("step 1")}
    assert ranks == {"[0", "[1", "[2", "[3"}  # one "[rank pod] step 1" line per pod
    report = ip.run_line_magic("ranktable", "layout mag4")
    assert report["planned"]["crossings_per_tier"][0] <= report["given"]["crossings_per_tier"][0]
    capacity = ip.run_line_magic("ranktable", "cluster")
    assert sum(capacity["per_leaf"].values()) == 64 - 32
    stopped = ip.run_line_magic("ranktable", "stop mag4")
    assert stopped == ["job/mag4", "configmap/configmap1980-mag4"]
    said = stopped._repr_html_()
    assert "deleted job/mag4" in said and "new log lines of run" in said and "archived" in said
    archived = list((tmp_path / "home" / "logs" / "default" / "mag4").glob("*/*.log"))
    assert len(archived) == 4 and all("step 1" in f.read_text() for f in archived)
    with pytest.raises(UsageError, match="not found"):
        ip.run_line_magic("ranktable", "stop mag4")


def test_connect_and_sync_with_progress(
    ip: InteractiveShell, sshd_profile: SshdProfile, tmp_path: Path
) -> None:
    magics(ip).manager = sshd_profile.manager
    assert ip.run_line_magic("ranktable", "connect box") == "ok"
    project = tmp_path / "proj"
    project.mkdir()
    (project / "a.py").write_text("A = 1\n")
    result = ip.run_line_magic("ranktable", f"sync box {project}")
    assert result == {"uploaded": ["a.py"], "conflicts": []}
    assert result._repr_html_().count("uploaded 1 file(s)") == 1 and "via" in result._repr_html_()
    again = ip.run_line_magic("ranktable", f"sync box {project}")  # nothing to do: no "via none"
    assert "unchanged 1" in again._repr_html_() and "via none" not in again._repr_html_()
    assert (sshd_profile.remote_dir / "a.py").read_text() == "A = 1\n"
    with pytest.raises(UsageError, match="no SSH profile named 'ghost'"):
        ip.run_line_magic("ranktable", "connect ghost")
