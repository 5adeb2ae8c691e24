"""Re-lint only what an edit can change: the editor's path (numlint.lsp).

numlint.engine asks `Incremental.plan` which definitions of a buffer to lint and hands the
findings to `Incremental.update`; this module never lints itself.

A buffer is cut into its top-level statements. The findings of each definition (function or
class) are kept by its text, by the statements above it that last bind the names it mentions
(an import, or `torch = None`), by which of those names any statement binds, and by the texts
of the definitions that call it (how a caller uses a helper decides some findings). After an
edit, what can have changed is linted again, in a copy of the buffer without the other
definitions (numlint.chunks): definitions whose key is new, definitions mentioning a name
that a statement which appeared or went away binds (the readers of a changed import or
constant, the callers of a changed function), what any of these or the module statements
call (a training loop's helper, a model class), and every module statement (they are short,
and the training rules read them in order). The rest keep their findings, moved to their new
lines. A change to the configuration, to file-level suppressions or to which rules the text
activates, and a star import appearing or going away, lint everything.
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

from numlint.chunks import DEFS
from numlint.diagnostic import Diagnostic
from numlint.positions import line_offsets, unit_start
from numlint.reparse import Reparser, StatementParser
from numlint.rule import RuleSpec

_CALLED = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\s*\(")
_WORD = re.compile(r"[A-Za-z_]\w*")
#: What a star import binds: any name.
_ANY = "*"

_Key = tuple[str, tuple[tuple[str, str], ...], frozenset[str], tuple[str, ...]]
_Imports = tuple[tuple[str, ...], bool]


@dataclass(frozen=True)
class _Chunk:
    name: str | None  # a definition's name; None for other statements
    start: int  # first line, decorators included
    end: int
    text: str
    binds: frozenset[str]  # the module-level names it binds
    imports: bool  # holds an import statement


@dataclass
class Plan:
    """What of a buffer to lint: `only` the definitions starting on these lines (None: all
    of it); nothing when `cached` (every finding is known)."""

    chunks: list[_Chunk]
    keys: dict[int, _Key]
    imports: dict[int, _Imports]
    affected: list[_Chunk] | None = None
    cached: bool = False
    #: What the findings of a full lint were found with (configuration, active rules, ...).
    key: tuple[object, ...] | None = None

    @property
    def only(self) -> frozenset[int] | None:
        return None if self.affected is None else frozenset(c.start for c in self.affected)


class Incremental:
    """One buffer's findings, updated edit by edit: `engine.lint(..., reuse=this)` equals
    `engine.lint` of the whole text."""

    def __init__(self) -> None:
        self._key: tuple[object, ...] | None = None
        #: Findings of a definition by its key (see _def_keys), rows relative to its
        #: first line, and the imports above it they were found with.
        self._by_key: dict[_Key, tuple[list[Diagnostic], _Imports]] = {}
        #: The statements last linted, and the findings of their module statements.
        self._chunks: list[_Chunk] = []
        self._outside: list[list[Diagnostic]] = []
        self._words: dict[str, frozenset[str]] = {}
        #: The findings of each statement at its lines, by (id of its kept findings, first
        #: line), from the last _assemble (with the kept findings, which keep the id taken).
        self._placed: dict[tuple[int, int], tuple[list[Diagnostic], list[Diagnostic]]] = {}
        #: What the module statements bind, by their text (see _split).
        self._binds: dict[str, tuple[frozenset[str], bool]] = {}
        #: How the last call went: "full", "partial" or "cached" (for tests and benchmarks).
        self.last = ""
        #: Other files (and directories) the findings were read from (numlint.analysis):
        #: when one changes, the buffer is linted again in full.
        self.dependencies: set[str] = set()
        #: The buffer's last ast, parsed again only where an edit changed it.
        self.syntax_tree = Reparser().syntax_tree
        #: libcst's trees of its top-level statements, parsed again only where they changed.
        self.statements = StatementParser()

    def reset(self) -> None:
        """The buffer does not parse: the next lint is a full one."""
        self._key = None
        self.last = "full"
        self.dependencies = set()

    def plan(
        self,
        source: str,
        tree: ast.Module,
        path: str,
        rules: Sequence[RuleSpec],
        active: Sequence[str],
        file_ignores: frozenset[str],
    ) -> Plan:
        """What to lint of `source` (CPython's tree `tree`), whose `active` rules (codes)
        pass their prefilters and whose file-level suppressions are `file_ignores`."""
        chunks = _split(source, tree, self._binds)
        keys, imports = self._def_keys(chunks)
        key = (path, _rules_key(rules), tuple(active), file_ignores)
        changed = _changed(self._chunks, chunks)
        if key != self._key or _ANY in changed:
            self.dependencies = set()
            return Plan(chunks, keys, imports, key=key)
        new = [c for c in chunks if c.name is not None and not self._known(c, keys, imports)]
        if not new and not changed and _outside(chunks) == _outside(self._chunks):
            return Plan(chunks, keys, imports, [], cached=True)
        changed.update(c.name for c in new if c.name is not None)
        return Plan(chunks, keys, imports, self._affected(chunks, new, changed))

    def update(self, plan: Plan, found: Sequence[Diagnostic]) -> list[Diagnostic]:
        """Keep the `found` findings of what `plan` linted; every finding of the buffer."""
        if plan.cached:
            self._chunks = plan.chunks
            self.last = "cached"
            return self._assemble(plan.chunks, plan.keys)
        if plan.affected is None:
            self._key = plan.key
            defs = [c for c in plan.chunks if c.name is not None]
            self._remember(plan.chunks, plan.keys, plan.imports, found, defs)
            self.last = "full"
            return list(found)
        self._remember(plan.chunks, plan.keys, plan.imports, found, plan.affected)
        self.last = "partial"
        return self._assemble(plan.chunks, plan.keys)

    def _words_of(self, text: str) -> frozenset[str]:
        words = self._words.get(text)
        if words is None:
            words = self._words[text] = frozenset(_WORD.findall(text))
        return words

    def _def_keys(self, chunks: Sequence[_Chunk]) -> tuple[dict[int, _Key], dict[int, _Imports]]:
        """Each definition's key (its text, and the names it mentions that statements above
        it bind and that any statement binds), and the imports above it: a fix spells the
        name it writes (`torch.sigmoid`) with them, whether the definition mentions them or
        not."""
        keys, imports = {}, {}
        anywhere = frozenset().union(*(c.binds for c in chunks))
        above: dict[str, str] = {}  # name -> the text of the statement above that bound it last
        above_imports: list[str] = []
        defs = [c for c in chunks if c.name is not None]
        # how its callers use it decides some findings (gradients off, a result only
        # compared): an edited caller makes its callees new
        names = frozenset(c.name for c in defs)
        mentioning: dict[str | None, list[_Chunk]] = {}
        for d in defs:
            for name in self._words_of(d.text) & names:
                mentioning.setdefault(name, []).append(d)
        for c in chunks:
            if c.name is not None:
                words = self._words_of(c.text)
                callers = tuple(d.text for d in mentioning.get(c.name, ()) if d is not c)
                bound = tuple(sorted((n, above[n]) for n in words & above.keys()))
                keys[id(c)] = (c.text, bound, words & anywhere, callers)
                imports[id(c)] = (tuple(above_imports), "torch" in above)
            above.update(dict.fromkeys(c.binds, c.text))
            if c.imports:
                above_imports.append(c.text)
        return keys, imports

    def _known(self, c: _Chunk, keys: dict[int, _Key], imports: dict[int, _Imports]) -> bool:
        """Whether the findings kept for `c` hold where it is now."""
        kept = self._by_key.get(keys[id(c)])
        return kept is not None and (not kept[0] or kept[1] == imports[id(c)])

    def _affected(
        self, chunks: Sequence[_Chunk], new: Sequence[_Chunk], changed: set[str]
    ) -> list[_Chunk]:
        """The new definitions, those mentioning a changed name, and what they or the module
        statements call (transitively)."""
        defs = [c for c in chunks if c.name is not None]
        picked = {id(c): c for c in new}
        for c in defs:
            if not changed.isdisjoint(self._words_of(c.text)):
                picked[id(c)] = c
        named: dict[str, list[int]] = {}  # a name -> where definitions of it are in `defs`
        for i, c in enumerate(defs):
            named.setdefault(c.name or "", []).append(i)
        todo = list(picked.values()) + [c for c in chunks if c.name is None]
        while todo:
            called = set(_CALLED.findall(todo.pop().text))
            for i in sorted(i for name in called & named.keys() for i in named[name]):
                c = defs[i]
                if id(c) not in picked:
                    picked[id(c)] = c
                    todo.append(c)
        return list(picked.values())

    def _remember(
        self,
        chunks: Sequence[_Chunk],
        keys: dict[int, _Key],
        imports: dict[int, _Imports],
        found: Sequence[Diagnostic],
        which: Sequence[_Chunk],
    ) -> None:
        live = set(keys.values())
        self._by_key = {k: ds for k, ds in self._by_key.items() if k in live}
        texts = {c.text for c in chunks}
        self._words = {t: w for t, w in self._words.items() if t in texts}
        self._binds = {t: b for t, b in self._binds.items() if t in texts}
        by_row = sorted(found, key=lambda d: d.row)
        rows = [d.row for d in by_row]
        self._outside = [_within(c, by_row, rows) for c in chunks if c.name is None]
        for c in which:
            self._by_key[keys[id(c)]] = (_within(c, by_row, rows), imports[id(c)])
        self._chunks = list(chunks)

    def _assemble(self, chunks: Sequence[_Chunk], keys: dict[int, _Key]) -> list[Diagnostic]:
        """The findings of every statement, at its current lines."""
        outside = iter(self._outside)
        out: list[Diagnostic] = []
        placed: dict[tuple[int, int], tuple[list[Diagnostic], list[Diagnostic]]] = {}
        for c in chunks:
            kept = next(outside) if c.name is None else self._by_key[keys[id(c)]][0]
            if not kept:
                continue
            # a statement that did not move keeps its findings from the last time
            last = self._placed.get((id(kept), c.start))
            moved = last[1] if last is not None and last[0] is kept else None
            if moved is None:
                moved = [_moved(d, c.start) for d in kept]
            placed[(id(kept), c.start)] = (kept, moved)
            out.extend(moved)
        self._placed = placed
        return sorted(set(out), key=lambda d: (d.row, d.column, d.code, d.end_row, d.end_column))


def _outside(chunks: Sequence[_Chunk]) -> list[str]:
    return [c.text for c in chunks if c.name is None]


def _changed(old: Sequence[_Chunk], new: Sequence[_Chunk]) -> set[str]:
    """The names bound by statements that went away, and by module statements that
    appeared (a new definition is found by its key)."""
    before = Counter((c.text, c.name) for c in old)
    after = Counter((c.text, c.name) for c in new)
    binds = {(c.text, c.name): c.binds for c in [*old, *new]}
    names: set[str] = set()
    for k in before - after:
        names |= binds[k]
    for k in after - before:
        if k[1] is None:
            names |= binds[k]
    return names


def _within(c: _Chunk, found: Sequence[Diagnostic], rows: Sequence[int]) -> list[Diagnostic]:
    """The findings on the lines of `c`, rows relative to its first line (`found` in the
    order of their rows, `rows`)."""
    lo, hi = bisect_left(rows, c.start), bisect_right(rows, c.end)
    return [_moved(d, -c.start) for d in found[lo:hi]]


def _moved(d: Diagnostic, by: int) -> Diagnostic:
    """`d` (and its fix) `by` lines further down (what dataclasses.replace gives, built
    directly: a moved function's every finding is moved on each edit above it)."""
    fix = d.fix
    if fix is not None:
        edits = tuple(replace(e, row=e.row + by, end_row=e.end_row + by) for e in fix.edits)
        fix = replace(fix, edits=edits)
    return Diagnostic(
        d.code, d.name, d.message, d.filename, d.row + by, d.column, d.end_row + by,
        d.end_column, fix, d.extra, d.confidence, d.related,
    )  # fmt: skip


def _rules_key(rules: Sequence[RuleSpec]) -> tuple[object, ...]:
    return tuple((r.CODE, repr(sorted(opts.items()))) for r, opts in rules)


def _split(
    source: str, tree: ast.Module, known: dict[str, tuple[frozenset[str], bool]] | None = None
) -> list[_Chunk]:
    """The top-level statements of `source`. `known`: what statements bind (_binds), by
    their text, kept from one edit to the next (the lines of a statement that begins its
    first line decide it)."""
    offsets = line_offsets(source)
    out: list[_Chunk] = []
    for stmt in tree.body:
        start = unit_start(stmt)
        end = stmt.end_lineno or stmt.lineno
        name = stmt.name if isinstance(stmt, DEFS) else None
        text = source[offsets[start - 1] : offsets[end] if end < len(offsets) else len(source)]
        if known is not None and name is None and stmt.col_offset == 0:
            # a statement at the start of its line: the one its lines' text begins with
            bound = known.get(text)
            if bound is None:
                bound = known[text] = _binds(stmt)
        else:
            bound = _binds(stmt)
        binds, imports = bound
        if out and out[-1].end >= start:  # statements sharing a line (`a = 1; b = 2`)
            prev = out.pop()
            start, name, binds = prev.start, None, prev.binds | binds
            imports = imports or prev.imports
            text = source[offsets[start - 1] : offsets[end] if end < len(offsets) else len(source)]
        out.append(_Chunk(name, start, end, text, binds, imports))
    return out


def _binds(stmt: ast.stmt) -> tuple[frozenset[str], bool]:
    """The names a top-level statement binds, deletes or declares (`*`: a star import), and
    whether it is or holds an import (a definition's own imports are its own)."""
    if isinstance(stmt, DEFS):
        return frozenset({stmt.name}), False
    names: set[str] = set()
    imports = False
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            imports = True
            names.update(a.asname or a.name.split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
        elif isinstance(node, (*DEFS, ast.ExceptHandler, ast.MatchAs, ast.MatchStar)):
            if node.name:
                names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
    return frozenset(names), imports
