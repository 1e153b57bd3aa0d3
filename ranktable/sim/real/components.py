"""Where the real control plane's pieces come from: the binaries `make controlplane` built, and Volcano's
CRDs and webhook configurations read from the Volcano Go module in GOMODCACHE (never copied into the repo).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

from ranktable.errors import RanktableError

BINARIES = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "vc-webhook-manager",
    "vc-controller-manager",
    "vc-scheduler",
)
MODULE_DIR = Path(__file__).resolve().parents[3] / "controlplane"
# the admission paths we serve (the chart's set without the pod webhooks, which this pool does not need)
ADMISSION_PATHS = (
    "/jobs/mutate",
    "/jobs/validate",
    "/podgroups/mutate",
    "/queues/mutate",
    "/queues/validate",
    "/hypernodes/validate",
)
GO_TIMEOUT = 60


def _go() -> str:
    return shutil.which("go") or "/usr/local/go/bin/go"


def bin_dir() -> Path:
    """The folder of built binaries: $RANKTABLE_CONTROLPLANE_BIN, else the build cache of this checkout."""
    if os.environ.get("RANKTABLE_CONTROLPLANE_BIN"):
        found = Path(os.environ["RANKTABLE_CONTROLPLANE_BIN"])
    else:
        script = MODULE_DIR / "build.sh"
        if not script.is_file():
            raise RanktableError(
                "the real control plane is built from a checkout of the repository",
                where=str(script),
                fix="set RANKTABLE_CONTROLPLANE_BIN to a folder with the binaries, or run from a clone",
            )
        out = subprocess.run(
            ["bash", str(script), "--bin-dir"], capture_output=True, text=True, check=True, timeout=GO_TIMEOUT
        )
        found = Path(out.stdout.strip())
    missing = [b for b in BINARIES if not (found / b).is_file()]
    if missing:
        raise RanktableError(
            f"the real control plane is not built ({', '.join(missing)} missing)",
            where=str(found),
            fix="run `make controlplane` (builds from Go modules; ~30 min the first time)",
        )
    return found


def volcano_module_dir() -> Path:
    """Volcano's module folder in GOMODCACHE (its CRDs and chart), as pinned by controlplane/volcano."""
    if os.environ.get("RANKTABLE_VOLCANO_MODULE"):
        return Path(os.environ["RANKTABLE_VOLCANO_MODULE"])
    env = dict(os.environ, GOTOOLCHAIN="local", GOFLAGS="-mod=mod")
    try:
        out = subprocess.run(
            [_go(), "list", "-m", "-f", "{{.Dir}}", "volcano.sh/volcano"],
            cwd=MODULE_DIR / "volcano",
            capture_output=True,
            text=True,
            env=env,
            check=True,
            timeout=GO_TIMEOUT,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise RanktableError(
            f"cannot find the Volcano module ({exc})",
            where=str(MODULE_DIR / "volcano"),
            fix="run `make controlplane` (it downloads the module into GOMODCACHE)",
        ) from exc
    return Path(out.stdout.strip())


def crds(module: Path) -> list[dict[str, Any]]:
    chart = module / "installer" / "helm" / "chart" / "volcano"
    files = sorted((chart / "crd" / "bases").glob("*.yaml")) + sorted(
        (chart / "charts" / "jobflow" / "crd" / "bases").glob("*.yaml")
    )
    docs = [d for f in files for d in yaml.safe_load_all(f.read_text()) if d]
    if not docs:
        raise RanktableError("no Volcano CRDs found", where=str(chart), fix="run `make controlplane`")
    return docs


_DIRECTIVE = re.compile(r"^\s*\{\{-?\s*(if|end|else|toYaml)\b.*\}\}\s*$")


def webhook_configurations(module: Path, url: str, ca_bundle: str) -> list[dict[str, Any]]:
    """The chart's webhook configurations for ADMISSION_PATHS, pointed at `url` instead of a Service."""
    text = (module / "installer" / "helm" / "chart" / "volcano" / "templates" / "webhooks.yaml").read_text()
    lines = [line for line in text.splitlines() if not _DIRECTIVE.match(line)]
    rendered = "\n".join(lines).replace("{{ .Release.Namespace }}", "volcano-system")
    rendered = re.sub(r"\{\{[^}]*\}\}", "volcano", rendered)
    out = []
    for doc in yaml.safe_load_all(rendered):
        if not doc or not doc.get("webhooks"):
            continue
        for hook in doc["webhooks"]:
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {"url": url + path, "caBundle": ca_bundle}
        if hook["clientConfig"]["url"].removeprefix(url) in ADMISSION_PATHS:
            out.append(doc)
    return out
