"""The in-container launcher: waits, routes, finds its server, starts one process per NPU (or torchrun)."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ranktable.launch.launcher import find_server, launch_parser, parse_exports, torchrun_argv
from ranktable.topology import encode_tor_file

ROOT = Path(__file__).resolve().parents[2]
TRAIN = str(ROOT / "examples" / "train.py")
TORS = ["10.0.0.1", "10.0.0.2", "10.0.0.1", "10.0.0.2"]  # pod order alternates leaves: routing reorders


def server_ip(i: int) -> str:
    return f"192.168.0.{11 + i}"


def write_tables(directory: Path, servers: int = 4) -> Path:
    table = {
        "status": "completed",
        "version": "1.0",
        "server_count": str(servers),
        "server_list": [
            {
                "server_id": server_ip(s),
                "host_ip": server_ip(s),
                "device": [
                    {"device_id": str(d), "device_ip": f"29.{s}.0.{d}", "rank_id": str(s * 8 + d)}
                    for d in range(8)
                ],
            }
            for s in range(servers)
        ],
    }
    tor = {
        "status": "completed",
        "version": "1.0",
        "server_count": str(servers),
        "server_list": [
            {
                "pod_name": f"job-job-1-{s}",
                "server_id": server_ip(s),
                "device": [
                    {
                        "device_id": str(d),
                        "device_ip": f"29.{s}.0.{d}",
                        "rank_id": str(s * 8 + d),
                        "tor_ip": TORS[s],
                        "tor_port": str(d),
                    }
                    for d in range(8)
                ],
            }
            for s in range(servers)
        ],
    }
    path = directory / "jobstart_hccl.json"
    path.write_text(json.dumps(table))
    (directory / "ranktable_tor.json").write_text(encode_tor_file(tor))
    return path


def launch_argv(*extra: str, nodes: int = 4, wait: float = 5, steps: int = 2) -> list[str]:
    """`-m ranktable launch ...` for a MindSpore job of `nodes` x 8 NPUs running examples/train.py."""
    return [
        "-m",
        "ranktable",
        "launch",
        "--framework",
        "mindspore",
        "--job",
        "job",
        "--task",
        "job-1",
        "--nodes",
        str(nodes),
        "--npus",
        "8",
        "--wait-timeout",
        str(wait),
        "--",
        TRAIN,
        "--interval",
        "0",
        "--steps",
        str(steps),
        *extra,
    ]


def launch(
    table: Path, host_ip: str, *extra: str, routing: bool = False, nodes: int = 4, wait: float = 5
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "RANK_TABLE_FILE": str(table),
        "ip": host_ip,
        "ROUTE_PLAN": "true" if routing else "",
    }
    argv = [sys.executable, *launch_argv(*extra, nodes=nodes, wait=wait)]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)


def ranks_started(output: str) -> list[tuple[int, str]]:
    """Each child's start line, tagged by the launcher with the rank that printed it."""
    found = re.findall(r"^\[rank(\d+)\]: rank (\d+)/32 server \S+ device (\d+)", output, re.M)
    assert all(tag == rank for tag, rank, _ in found)  # the tag is the child's own rank
    return sorted((int(rank), device) for _, rank, device in found)


def test_mindspore_starts_one_process_per_local_npu(tmp_path: Path) -> None:
    done = launch(write_tables(tmp_path), server_ip(1))
    assert done.returncode == 0, done.stderr
    assert ranks_started(done.stdout) == [(8 + d, str(d)) for d in range(8)]
    assert done.stdout.count(" done") == 8


def test_routing_renumbers_by_leaf(tmp_path: Path) -> None:
    done = launch(write_tables(tmp_path), server_ip(1), routing=True)
    assert done.returncode == 0, done.stderr
    # leaves {0, 2} then {1, 3}: pod 1 becomes node rank 2, ranks 16..23
    assert "route plan applied: NODE_RANK=2" in done.stderr
    assert [r for r, _ in ranks_started(done.stdout)] == list(range(16, 24))
    assert (tmp_path / "jobstart_routeplan.json").is_file()


def test_routing_is_skipped_below_three_nodes(tmp_path: Path) -> None:
    done = launch(write_tables(tmp_path), server_ip(1), routing=True, nodes=2)
    assert done.returncode == 0, done.stderr
    assert "routing skipped" in done.stderr
    assert [r for r, _ in ranks_started(done.stdout)] == list(range(8, 16))


def test_one_failing_rank_stops_the_others_and_sets_the_exit_code(tmp_path: Path) -> None:
    done = launch(write_tables(tmp_path), server_ip(0), "--steps", "100000", "--fail-at", "3")
    assert done.returncode == 1
    assert "simulated failure" in done.stdout + done.stderr
    # every line a child printed carries its rank, so triage files the traceback under that rank
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line]
    children = [line for line in lines if re.search(r"\brank \d+ (?:step|server)", line)]
    assert children and all(re.match(r"\[rank(\d+)\]: rank \1 ", line) for line in children)


def test_an_initializing_table_times_out_without_starting(tmp_path: Path) -> None:
    table = tmp_path / "jobstart_hccl.json"
    table.write_text('{"status": "initializing"}')
    done = launch(table, server_ip(0), wait=1)
    assert done.returncode != 0
    assert "rank" not in done.stdout
    assert "not starting training" in done.stderr


def test_find_server_by_ip_then_pod_index(tmp_path: Path) -> None:
    table = json.loads(write_tables(tmp_path).read_text())
    assert find_server(table, server_ip(2), None).node_rank == 2
    assert find_server(table, None, 3).devices[0] == (0, 24)
    with pytest.raises(LookupError):
        find_server(table, "10.9.9.9", None)


def test_exports_are_parsed_without_a_shell() -> None:
    text = "export RANK_TABLE_FILE='/a b/x.json'\nexport NODE_RANK=2\necho $(rm -rf /)\n"
    assert parse_exports(text) == {"RANK_TABLE_FILE": "/a b/x.json", "NODE_RANK": "2"}


def test_torchrun_uses_the_planned_node_rank_and_svc_master() -> None:
    args = launch_parser().parse_args(
        [
            "--framework",
            "pytorch",
            "--job",
            "gpt",
            "--task",
            "gpt-1",
            "--nodes",
            "4",
            "--npus",
            "8",
            "--master-port",
            "29600",
            "--",
            "train.py",
            "--lr",
            "1",
        ]
    )
    assert isinstance(args, argparse.Namespace)
    argv = torchrun_argv(args, 3, ["train.py", "--lr", "1"], python="python3")
    assert argv == [
        "python3",
        "-m",
        "torch.distributed.run",
        "--nnodes=4",
        "--nproc_per_node=8",
        "--node_rank=3",
        "--master_addr=gpt-gpt-1-0.gpt",
        "--master_port=29600",
        "--tee=3",
        "train.py",
        "--lr",
        "1",
    ]


def torchrun_launch(tmp_path: Path, **env: str) -> tuple[list[str], dict[str, str]]:
    """Run `ranktable launch --framework pytorch` with a stand-in interpreter that records the torchrun
    command line and environment it was given (no torch here); (argv, env)."""
    record = tmp_path / "torchrun.json"
    stand_in = tmp_path / "python"
    stand_in.write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        f"json.dump([sys.argv[1:], dict(os.environ)], open({str(record)!r}, 'w'))\n"
    )
    stand_in.chmod(0o755)
    argv = [
        sys.executable, "-m", "ranktable", "launch", "--framework", "pytorch", "--job", "job",
        "--task", "job-1", "--nodes", "4", "--npus", "8", "--wait-timeout", "5",
        "--python", str(stand_in), "--", "train.py",
    ]  # fmt: skip
    full_env = {**os.environ, "RANK_TABLE_FILE": str(write_tables(tmp_path)), "ip": server_ip(1), **env}
    done = subprocess.run(argv, env=full_env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    args, seen = json.loads(record.read_text())
    return args, seen


def test_torchrun_children_are_tagged_with_their_global_rank(tmp_path: Path) -> None:
    """torchrun gets --tee=3 and a prefix template giving each child's global rank; the tag it then writes
    (string.Template, as torch substitutes it) files an 8-process pod's traceback under that rank and NPU."""
    from string import Template

    from ranktable.observe import RankLayout, RankPlace, RunObserver

    args, env = torchrun_launch(tmp_path)
    assert args[:2] == ["-m", "torch.distributed.run"] and "--tee=3" in args and "--node_rank=1" in args
    template = env["TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE"]
    assert template == "[rank${rank}]: "

    def tagged(rank: int, text: str) -> str:
        return Template(template).safe_substitute(role_name="default", rank=rank, local_rank=rank - 8) + text

    layout = RankLayout(RankPlace(8 + d, 1, "job-job-1-1", server_ip(1), d) for d in range(8))
    observer = RunObserver(layout)
    lines = [tagged(r, f"step 1 loss 2.{r}") for r in range(8, 16)]
    lines += [
        tagged(11, "Traceback (most recent call last):"),
        tagged(11, '  File "train.py", line 9, in <module>'),
        tagged(11, "IndexError: list index out of range"),
    ]
    lines += [tagged(r, "Received SIGTERM, exiting") for r in range(8, 16) if r != 11]
    observer.feed("job-job-1-1", 1, [(f"2026-01-01T00:00:{i:02d}Z", line) for i, line in enumerate(lines)])
    first = observer.diagnose("Failed")["first_failure"]
    assert (first["rank"], first["device"], first["node_rank"]) == (11, 3, 1), first
    assert "IndexError" in first["line"]


def test_a_prefix_template_the_user_set_is_kept(tmp_path: Path) -> None:
    _, env = torchrun_launch(tmp_path, TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE="<${local_rank}> ")
    assert env["TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE"] == "<${local_rank}> "
