"""Suppression comments: `# noqa`, `# noqa: NUM101`, `# numlint: ignore[NUM101]`,
`# numlint: file-ignore[NUM101]` (or bare `# numlint: file-ignore`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_NOQA = re.compile(r"#\s*noqa(?::[\s]*(?P<codes>[\w-]+(?:[\s,]+[\w-]+)*))?", re.IGNORECASE)
_IGNORE = re.compile(r"#\s*numlint:\s*(?P<kind>ignore|file-ignore)(?:\[(?P<codes>[^\]]*)\])?")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")

ALL = "*"


@dataclass
class Suppressions:
    """Codes suppressed per line (1-based) and for the whole file; `ALL` means every code."""

    lines: dict[int, set[str]] = field(default_factory=dict)
    file: set[str] = field(default_factory=set)

    def covers(self, code: str, name: str, rows: tuple[int, ...]) -> bool:
        if _hit(self.file, code, name):
            return True
        return any(_hit(self.lines.get(row, set()), code, name) for row in rows)


def _hit(codes: set[str], code: str, name: str) -> bool:
    return ALL in codes or code in codes or name in codes


def _codes(text: str | None) -> set[str]:
    if not text or not text.strip():
        return {ALL}
    return {c for c in re.split(r"[\s,]+", text.strip()) if c}


def parse(source: str) -> Suppressions:
    """Find suppression comments. A cheap substring test skips files that have none."""
    found = Suppressions()
    if "noqa" not in source.lower() and "numlint:" not in source:
        return found
    for row, line in enumerate(_LINE_BREAK.split(source), start=1):
        if "#" not in line:
            continue
        for m in _NOQA.finditer(line):
            found.lines.setdefault(row, set()).update(_codes(m.group("codes")))
        for m in _IGNORE.finditer(line):
            target = (
                found.file
                if m.group("kind") == "file-ignore"
                else found.lines.setdefault(row, set())
            )
            target.update(_codes(m.group("codes")))
    return found
