"""Re-lint only what an edit can change: the editor's path (numlint.lsp).

A buffer is cut into its top-level statements. The findings of each definition (function or
class) are kept by its text. After an edit, the definitions whose text is new are linted
again, together with those that mention a changed definition's name (its callers) and those
a changed definition calls (a training loop's helper, a model class), in a copy of the buffer
without the other definitions (numlint.chunks); the rest
keep their findings, moved to their new lines. Any change outside definitions (imports,
module statements, file-level suppressions, the order of definitions among them) or to the
configuration lints the whole buffer.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from numlint import engine, suppress
from numlint.chunks import DEFS, unit_start
from numlint.diagnostic import Diagnostic
from numlint.positions import line_offsets

_CALLED = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\s*\(")


@dataclass(frozen=True)
class _Chunk:
    name: str | None  # a definition's name; None for other statements
    start: int  # first line, decorators included
    end: int
    text: str


class Incremental:
    """One buffer's findings, updated edit by edit; `lint` equals `engine.lint` of the text."""

    def __init__(self) -> None:
        self._key: tuple[object, ...] | None = None
        #: Findings of a top-level statement by its text, rows relative to its first line.
        self._by_text: dict[str, list[Diagnostic]] = {}
        #: Findings of each other top-level statement, in order (they are all re-linted
        #: whenever anything is: their texts are part of the key).
        self._outside: list[list[Diagnostic]] = []
        #: How the last call went: "full", "partial" or "cached" (for tests and benchmarks).
        self.last = ""

    def lint(self, source: str, path: str, rules: Sequence[engine.RuleSpec]) -> list[Diagnostic]:
        tree = engine.syntax_tree(source, path)
        if isinstance(tree, list):
            self._key = None
            self.last = "full"
            return engine.lint(source, path, rules)
        chunks = _split(source, tree)
        # Module statements, and where each definition sits among them.
        outside = tuple(c.text if c.name is None else c.name for c in chunks)
        key = (path, _rules_key(rules), outside, frozenset(suppress.parse(source).file))
        if key != self._key:
            found = engine.lint(source, path, rules, tree=tree)
            self._key = key
            self._remember(chunks, found, [c for c in chunks if c.name is not None])
            self.last = "full"
            return found
        new = [c for c in chunks if c.name is not None and c.text not in self._by_text]
        if new:
            affected = _affected(chunks, new)
            only = frozenset(c.start for c in affected)
            found = engine.lint(source, path, rules, only=only, tree=tree)
            self._remember(chunks, found, affected)
        self.last = "partial" if new else "cached"
        return self._assemble(chunks)

    def _remember(
        self, chunks: Sequence[_Chunk], found: Sequence[Diagnostic], which: Sequence[_Chunk]
    ) -> None:
        live = {c.text for c in chunks}
        self._by_text = {t: ds for t, ds in self._by_text.items() if t in live}
        self._outside = [_within(c, found) for c in chunks if c.name is None]
        for c in which:
            self._by_text[c.text] = _within(c, found)

    def _assemble(self, chunks: Sequence[_Chunk]) -> list[Diagnostic]:
        """The cached findings of every statement, at its current lines."""
        outside = iter(self._outside)
        out = [
            _moved(d, c.start)
            for c in chunks
            for d in (next(outside) if c.name is None else self._by_text.get(c.text, ()))
        ]
        return sorted(set(out), key=lambda d: (d.row, d.column, d.code, d.end_row, d.end_column))


def _within(c: _Chunk, found: Sequence[Diagnostic]) -> list[Diagnostic]:
    """The findings on the lines of `c`, rows relative to its first line."""
    return [_moved(d, -c.start) for d in found if c.start <= d.row <= c.end]


def _moved(d: Diagnostic, by: int) -> Diagnostic:
    """`d` (and its fix) `by` lines further down."""
    fix = d.fix
    if fix is not None:
        edits = tuple(replace(e, row=e.row + by, end_row=e.end_row + by) for e in fix.edits)
        fix = replace(fix, edits=edits)
    return replace(d, row=d.row + by, end_row=d.end_row + by, fix=fix)


def _rules_key(rules: Sequence[engine.RuleSpec]) -> tuple[object, ...]:
    return tuple((r.CODE, repr(sorted(opts.items()))) for r, opts in rules)


def _split(source: str, tree: ast.Module) -> list[_Chunk]:
    offsets = line_offsets(source)
    out = []
    for stmt in tree.body:
        start = unit_start(stmt)
        end = stmt.end_lineno or stmt.lineno
        name = stmt.name if isinstance(stmt, DEFS) else None
        if out and out[-1].end >= start:  # statements sharing a line (`a = 1; b = 2`)
            start, name = out.pop().start, None
        text = source[offsets[start - 1] : offsets[end] if end < len(offsets) else len(source)]
        out.append(_Chunk(name, start, end, text))
    return out


def _affected(chunks: Sequence[_Chunk], new: Sequence[_Chunk]) -> list[_Chunk]:
    """The new definitions, their callers, and what they or module statements call
    (transitively)."""
    defs = [c for c in chunks if c.name is not None]
    names = "|".join(re.escape(c.name or "") for c in new)
    mention = re.compile(rf"\b(?:{names})\b")
    picked = {id(c): c for c in new}
    for c in defs:
        if mention.search(c.text):
            picked[id(c)] = c
    todo = list(picked.values()) + [c for c in chunks if c.name is None]
    while todo:
        called = set(_CALLED.findall(todo.pop().text))
        for c in defs:
            if c.name in called and id(c) not in picked:
                picked[id(c)] = c
                todo.append(c)
    return list(picked.values())
