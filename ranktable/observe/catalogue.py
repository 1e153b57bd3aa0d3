"""The error catalogue (catalogue.yaml): which log lines are errors, what they mean and how to fix them.

Matching is two-stage so streaming stays cheap: one RE2 automaton of every pattern scans a whole batch
of lines (linear time, no backtracking); only a batch that hits is looked at line by line.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, fields, replace
from functools import lru_cache
from importlib import resources
from itertools import accumulate
from typing import Any

import re2
import yaml

PRIMARY, VICTIM, CONTEXT = "primary", "victim", "context"
"""Roles: a fault that starts a failure, a symptom of another rank's, or a line that only says which rank
the following lines belong to (torchrun's failure summary)."""


@dataclass(frozen=True)
class Signature:
    id: str
    code: str
    role: str
    specificity: int
    title: str
    explanation: str
    fix: str
    source: str
    pattern: Any = None

    def to_json(self) -> dict[str, Any]:
        """Every field but the matching machinery (`specificity`, `pattern`)."""
        shown = (f.name for f in fields(self) if f.name not in ("specificity", "pattern"))
        return {name: getattr(self, name) for name in shown}


_PEER = re.compile(
    r"(?i)remote[_ ]?rank\D{0,4}(\d+)|user_rank\D{0,3}(\d+)"
    r"|Ranks? (\d+)(?:, \d+)* failed to pass monitoredBarrier"
)
_SCRIPT = re.compile(r"can't open file '([^']+)'")


class Catalogue:
    def __init__(self, data: dict[str, Any]) -> None:
        options = re2.Options()
        options.log_errors = False
        self.entries = [
            Signature(
                id=str(e["id"]),
                code=str(e["code"]),
                role=str(e["role"]),
                specificity=int(e.get("specificity", 1)),
                title=str(e["title"]),
                explanation=str(e["explanation"]).strip(),
                fix=str(e["fix"]).strip(),
                source=str(e["source"]),
                pattern=re2.compile(str(e["pattern"]), options),
            )
            for e in data["entries"]
        ]
        self.exits = {
            int(code): Signature(
                id=f"exit-{code}",
                code=str(e["code"]),
                role=str(e["role"]),
                specificity=2,
                title=str(e["title"]),
                explanation=str(e["explanation"]).strip(),
                fix=str(e["fix"]).strip(),
                source=str(e["source"]),
            )
            for code, e in (data.get("exits") or {}).items()
        }
        combined = "|".join(f"(?:{e['pattern']})" for e in data["entries"])
        self._any = re2.compile("(?m)" + combined, options)
        # every entry's pattern in one automaton: which of them match a line, in one pass
        self._each = re2.Set.SearchSet(options)
        for entry in self.entries:
            self._each.Add(entry.pattern.pattern)
        self._each.Compile()

    def any_error(self, text: str) -> bool:
        """Whether any signature occurs somewhere in ``text`` (many lines joined by newlines)."""
        return self._any.search(text) is not None

    def error_lines(self, lines: list[str]) -> list[int]:
        """Indices of the lines that may carry a signature (every line `classify` names is among them):
        those a match of the combined pattern over all of them touches."""
        joined = "\n".join(lines)
        spans = [m.span() for m in self._any.finditer(joined)]
        if not spans:
            return []
        ends = list(accumulate(len(line) + 1 for line in lines))  # one past each line's newline
        out: dict[int, None] = {}
        for start, end in spans:
            first = bisect_right(ends, start)
            for index in range(first, min(bisect_right(ends, end), len(lines) - 1) + 1):
                out[index] = None
        return list(out)

    def classify(self, line: str) -> Signature | None:
        """The first signature matching one line, or None."""
        if self._any.search(line) is None:
            return None
        found = self._each.Match(line)  # the entries whose pattern matches (search), in any order
        return self.entries[min(found)] if found else None

    def exit_signature(self, exit_code: int | None, reason: str | None = None) -> Signature | None:
        if reason == "OOMKilled":
            exit_code = 137
        if exit_code is not None and -64 < exit_code < 0:
            exit_code = 128 - exit_code  # a signal as Python reports it (-11) is the shell's 128 + 11
        return self.exits.get(exit_code) if exit_code is not None else None

    def by_code(self, code: str) -> Signature | None:
        return next((e for e in self.entries if e.code == code), None)


def named_peer(line: str) -> int | None:
    """The rank an HCCL message blames (``remote rank [5]``, LINK_ERROR_INFO ``user_rank 5``), if any."""
    match = _PEER.search(line)
    if match is None:
        return None
    return int(next(g for g in match.groups() if g is not None))


def refine(
    signature: Signature, line: str, mounts: tuple[str, ...] = (), script: str | None = None
) -> Signature:
    """The signature with advice that depends on the line and the job: a missing script given by an
    absolute path is not a working-directory problem (the path is simply not there; say which volumes
    are). `script` is the path the job gave, when known (Python prints the path it resolved)."""
    if signature.code != "CANT_OPEN_FILE":
        return signature
    found = _SCRIPT.search(line)
    if found is None:
        return signature
    looked = found.group(1)
    given = script or looked
    where = (
        f"the volumes mounted in the pod are {', '.join(mounts)}"
        if mounts
        else "check which volumes the pod mounts (kubectl describe pod)"
    )
    if not given.startswith("/"):
        seen = f" (Python looked for {looked})" if looked != given else ""
        return replace(
            signature,
            explanation=(
                f"Python could not open the training script {given!r}: a relative path is resolved against "
                f"the container's working directory{seen}, which is not where the code was synced."
            ),
            fix=f"{signature.fix} Here {where}.",
        )
    return replace(
        signature,
        explanation=(
            f"The script path {given} is absolute and does not exist in the container: the code is neither "
            "in the image at that path nor on a volume mounted there."
        ),
        fix=(
            f"Put the code on shared storage that the job mounts and use the path the pods see; {where}. "
            "A path copied from the Notebook instance works only if the same storage is mounted at the same "
            "path in the pods."
        ),
    )


@lru_cache(maxsize=1)
def catalogue() -> Catalogue:
    text = resources.files("ranktable.observe").joinpath("catalogue.yaml").read_text(encoding="utf-8")
    return Catalogue(yaml.safe_load(text))
