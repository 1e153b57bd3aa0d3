"""Jobs meet shared storage: a spec's instance paths become the pods' paths, with the volume added.

Every surface that composes or submits (the form and API, the CLI, the magics) calls `placed_and_checked`,
so a script path copied from a Notebook instance runs the same way from each of them.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ranktable.compose.flavours import Flavour
from ranktable.compose.spec import JobSpec
from ranktable.compose.storage import SharedStorage, place_on_shared_storage
from ranktable.compose.validate import INFO, Issue, validate_spec
from ranktable.home import ranktable_home


def known_shared_storage(state_dir: str | None = None) -> list[SharedStorage]:
    """The shared storage of every SSH profile (none when no profile exists: nothing to import then)."""
    home = Path(state_dir) if state_dir else ranktable_home()
    if not (home / "profiles.json").is_file():
        return []
    from ranktable.remote.profiles import ProfileStore

    return [
        replace(p.shared, label=f"profile {p.name}")
        for p in ProfileStore(home).list_profiles()
        if p.shared is not None
    ]


def placed_and_checked(
    spec: JobSpec,
    flavours: dict[str, Flavour] | None = None,
    *,
    state_dir: str | None = None,
    shared: list[SharedStorage] | None = None,
) -> tuple[JobSpec, list[Issue]]:
    """`spec` with its instance paths on shared storage turned into the pods' paths (volume added), and
    its findings: an info line per translation, a warning for a script no volume mounts."""
    storages = known_shared_storage(state_dir) if shared is None else shared
    spec, placement = place_on_shared_storage(spec, storages)
    issues = validate_spec(spec, flavours, storages)
    notes = [Issue(field, INFO, note) for field, note in placement.notes]
    notes += [
        Issue("volumes", INFO, f"added volume {name!r}: the shared storage the job's code is on")
        for name in placement.added
    ]
    return spec, issues + notes
