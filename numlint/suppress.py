"""Suppression comments: `# noqa`, `# noqa: NUM101`, `# numlint: ignore[NUM101]`,
`# numlint: file-ignore[NUM101]` (or bare `# numlint: file-ignore`)."""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from numlint.diagnostic import Diagnostic

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


def commentable_rows(source: str) -> frozenset[int] | None:
    """Rows (1-based) that end outside a string and without a backslash continuation, where
    a comment can go (None when the source does not tokenize)."""
    rows: set[int] = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type in (tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT):
                rows.add(tok.start[0])
    except (tokenize.TokenError, SyntaxError):
        return None
    return frozenset(rows)


@dataclass
class NoqaResult:
    """What `add_noqa` did: the new text, how many lines got a new or longer `# noqa`, and
    the findings it could not suppress (no line of theirs can hold a comment)."""

    source: str
    added: int
    skipped: list[Diagnostic] = field(default_factory=list)


def add_noqa(source: str, diagnostics: Iterable[Diagnostic]) -> NoqaResult:
    """Suppress each finding with `# noqa: CODE` on its first or last line (suppressions
    cover both), added to a `# noqa: ...` list already there. NUM000 (the file could not be
    parsed or a rule failed) is left alone: it needs a look, not a comment."""
    found = [d for d in diagnostics if d.code != "NUM000"]
    if not found:
        return NoqaResult(source, 0)
    lines = _LINE_BREAK.split(source)
    breaks = _LINE_BREAK.findall(source)
    safe = commentable_rows(source)
    wanted: dict[int, list[str]] = {}
    skipped = []
    for d in found:
        rows = [r for r in dict.fromkeys((d.row, d.end_row)) if 0 < r <= len(lines)]
        rows = [r for r in rows if safe is None or r in safe]
        if not rows:
            skipped.append(d)
            continue
        row = next((r for r in rows if r in wanted or _NOQA.search(lines[r - 1])), rows[0])
        codes = wanted.setdefault(row, [])
        if d.code not in codes:
            codes.append(d.code)
    added = 0
    for row, codes in wanted.items():
        text = lines[row - 1]
        present = parse(text).lines.get(1, set())
        if ALL in present:
            continue  # a bare noqa comment covers every code already
        new = [c for c in codes if c not in present]
        if not new:
            continue
        m = next((m for m in _NOQA.finditer(text) if m.group("codes")), None)
        if m is not None:
            lines[row - 1] = f"{text[: m.end('codes')]}, {', '.join(new)}{text[m.end('codes') :]}"
        else:
            lines[row - 1] = f"{text.rstrip()}  # noqa: {', '.join(new)}"
        added += 1
    out = "".join(line + end for line, end in zip(lines, [*breaks, ""], strict=True))
    return NoqaResult(out, added, skipped)
