"""Shared storage between a Notebook instance and the pods: path translation, the added volume, the
validation warning for a script no volume mounts (ranktable.compose.storage, #24)."""

from __future__ import annotations

import pytest

from ranktable.compose.spec import EntryPoint, JobSpec, VolumeSpec
from ranktable.compose.storage import SharedStorage, place_on_shared_storage, pod_path
from ranktable.compose.validate import WARNING, validate_spec
from ranktable.errors import InputError

SFS = SharedStorage(
    "/data/sfs", VolumeSpec("sfs", "hostPath", mount_path="/mnt/sfs_turbo", path="/mnt/sfs_turbo")
)
SAME = SharedStorage(
    "/home/ma-user/shared",
    VolumeSpec("shared", "hostPath", mount_path="/home/ma-user/shared", path="/home/ma-user/shared"),
)


def job(script: str, volumes: list[VolumeSpec] | None = None) -> JobSpec:
    return JobSpec(name="bert", image="train:v1", entry=EntryPoint(script), volumes=volumes or [])


def test_instance_path_becomes_the_pods_path_with_the_volume() -> None:
    spec, placement = place_on_shared_storage(job("/data/sfs/project/train.py"), [SFS])
    assert spec.entry is not None and spec.entry.script == "/mnt/sfs_turbo/project/train.py"
    assert [(v.name, v.kind, v.path, v.mount_path) for v in spec.volumes] == [
        ("sfs", "hostPath", "/mnt/sfs_turbo", "/mnt/sfs_turbo")
    ]
    assert placement.added == ("sfs",)
    assert placement.notes == (
        (
            "entry.script",
            "/data/sfs/project/train.py on the instance is /mnt/sfs_turbo/project/train.py in the pods",
        ),
    )
    again, second = place_on_shared_storage(spec, [SFS])  # idempotent: already the pods' path, mounted
    assert again == spec and second.added == () and second.notes == ()


def test_same_path_storage_adds_only_the_volume_and_command_words_translate() -> None:
    spec = JobSpec(name="bert", image="train:v1", command=["python", "/data/sfs/a.py", "--x", "/data/sfsx/b"])
    placed, placement = place_on_shared_storage(spec, [SFS, SAME])
    assert placed.command == [
        "python",
        "/mnt/sfs_turbo/a.py",
        "--x",
        "/data/sfsx/b",
    ]  # a prefix is not a folder
    same, p2 = place_on_shared_storage(job("/home/ma-user/shared/p/train.py"), [SFS, SAME])
    assert same.entry is not None and same.entry.script == "/home/ma-user/shared/p/train.py"
    assert p2.added == ("shared",) and p2.notes == ()
    assert placement.added == ("sfs",)


def test_paths_elsewhere_are_left_alone_and_names_do_not_clash() -> None:
    for script in ("train.py", "/home/ma-user/work/train.py", "/data/sfs/../etc/x.py"):
        spec = job(script)
        assert place_on_shared_storage(spec, [SFS])[0] is spec
    taken = job("/data/sfs/t.py", [VolumeSpec("sfs", "pvc", mount_path="/ckpt", claim="ckpt")])
    placed, placement = place_on_shared_storage(taken, [SFS])
    assert [v.name for v in placed.volumes] == ["sfs", "sfs-2"] and placement.added == ("sfs-2",)


def test_deepest_storage_wins() -> None:
    inner = SharedStorage("/data/sfs/team", VolumeSpec("team", "pvc", mount_path="/team", claim="team"))
    assert pod_path("/data/sfs/team/x.py", [SFS, inner]) == ("/team/x.py", inner)


def test_script_outside_every_volume_is_warned_with_the_volume_to_add() -> None:
    issues = validate_spec(job("/data/sfs/project/train.py"), shared=[SFS])
    warned = [i for i in issues if i.field == "entry.script" and i.severity == WARNING]
    assert len(warned) == 1
    assert "outside every mounted volume (mounted: none)" in warned[0].message
    assert "volume 'sfs' (hostPath /mnt/sfs_turbo at /mnt/sfs_turbo)" in warned[0].fix
    assert "/mnt/sfs_turbo/project/train.py" in warned[0].fix
    unknown = [i for i in validate_spec(job("/opt/code/train.py")) if i.field == "entry.script"]
    assert len(unknown) == 1 and "--hostpath" in unknown[0].fix
    mounted = job("/mnt/sfs_turbo/train.py", [SFS.volume])
    assert not [i for i in validate_spec(mounted, shared=[SFS]) if i.field == "entry.script"]


@pytest.mark.parametrize(
    ("data", "where"),
    [
        ({"instance_path": "data/sfs", "volume": {}}, "shared.instance_path"),
        (
            {"instance_path": "/data", "volume": {"name": "s", "kind": "hostPath", "mount_path": "x"}},
            "shared.volume.mount_path",
        ),
        (
            {"instance_path": "/data", "volume": {"name": "s", "kind": "s3", "mount_path": "/x"}},
            "shared.volume.kind",
        ),
        ({"instance_path": "/data", "volume": {}, "extra": 1}, "shared.extra"),
    ],
)
def test_bad_shared_storage_names_the_field(data: dict[str, object], where: str) -> None:
    with pytest.raises(InputError) as caught:
        SharedStorage.from_json(data)
    assert caught.value.where == where


def test_round_trip() -> None:
    assert SharedStorage.from_json(SFS.to_json()) == SFS
