"""Source positions of reported nodes, computed only for the top-level statements holding them.

libcst's PositionProvider regenerates the code of the whole module (about three times the cost
of parsing it). Each top-level statement starts at column 0, so its positions computed alone,
as a one-statement module, differ from those in the file by a line offset that CPython's `ast`
already knows (the line of the statement's first token). The offset is checked against both
the kind of each statement (and its end must not pass the ast's: blanked methods, see
numlint.chunks, can only shorten a class); on any disagreement the whole module's positions
are used instead.
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from itertools import accumulate, count
from operator import add
from typing import Any

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider
from libcst.metadata.position_provider import PositionProvidingCodegenState

from numlint.tree import children, descendants, unparenthesized

#: A line break as CPython and libcst count lines.
LINE_BREAK = re.compile(r"\r\n|\r|\n")


def unit_start(node: ast.stmt) -> int:
    """First line of a statement, decorators included."""
    return min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", ())])


def line_offsets(source: str) -> list[int]:
    """Offset of the start of each line (index 0 is line 1)."""
    if "\r" in source:
        return [0] + [m.end() for m in LINE_BREAK.finditer(source)]
    # Only `\n` breaks: line k + 1 starts after the lengths of the k lines before it and
    # their k breaks (summed without a match object per line).
    lengths = map(len, source.split("\n")[:-1])
    return [0, *map(add, accumulate(lengths), count(1))]


def rows_spelling(
    source: str, words: Iterable[str], offsets: Sequence[int] | None = None
) -> set[int]:
    """The 1-based numbers of the lines of `source` that spell one of `words`, as CPython's
    ast numbers them (`offsets`: its line_offsets, when the caller has them)."""
    rows: set[int] = set()
    for word in words:
        at = source.find(word) if word else -1
        while at != -1:
            if offsets is None:
                offsets = line_offsets(source)
            row = bisect_right(offsets, at)
            rows.add(row)
            at = source.find(word, offsets[row]) if row < len(offsets) else -1
    return rows


class Positions:
    """Maps nodes of `module` (parsed from `source`) to their CodeRange in the file."""

    def __init__(
        self,
        module: cst.Module,
        top: Sequence[ast.stmt],
        source: str,
        lines: Sequence[int] | None = None,
        offsets: Sequence[int] | None = None,
    ) -> None:
        self.module = module
        self.top = top
        self.source = source  # the file's text: `module` may hold only part of it
        self.lines = lines  # the file's line of each line of `module`, when they differ
        self.offsets = offsets  # line_offsets(source), when the caller has them
        self.ranges: dict[cst.CSTNode, CodeRange] = {}
        self.whole = False

    def prepare(self, nodes: Iterable[cst.CSTNode]) -> None:
        """Compute the positions of `nodes`."""
        wanted = {id(n): n for n in nodes if n not in self.ranges}
        if wanted and not self.whole:
            paths = _paths(self.module.body, wanted)
            self.whole = not self._place(self.module.body, self.top, 0, wanted, paths)
        if self.whole:
            ranges = MetadataWrapper(self.module, unsafe_skip_copy=True).resolve(PositionProvider)
            if self.lines is None:
                self.ranges = dict(ranges)
            else:
                at = self.lines
                self.ranges = {
                    n: CodeRange(
                        (at[r.start.line - 1], r.start.column), (at[r.end.line - 1], r.end.column)
                    )
                    for n, r in ranges.items()
                }

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        if node not in self.ranges:
            self.prepare([node])
        if node not in self.ranges and isinstance(node, cst.Module):
            return CodeRange((1, 0), (1, 0))  # a finding about the whole file (a rule crashed)
        return self.ranges[node]

    def _place(
        self,
        body: Sequence[cst.CSTNode],
        top: Sequence[ast.stmt],
        indent: int,
        wanted: dict[int, cst.CSTNode],
        paths: dict[int, tuple[int, ...]],
        depth: int = 0,
    ) -> bool:
        """Positions for the statements of `body` (at column `indent`, `depth` _BLOCKS deep)
        holding wanted nodes; `paths`: where each wanted node is (see _paths)."""
        anchors = _anchors(body, top)
        if anchors is None:
            return False
        held: dict[int, dict[int, cst.CSTNode]] = {}  # the wanted nodes of each statement
        for i, path in paths.items():
            if i in wanted and len(path) > depth:
                held.setdefault(path[depth], {})[i] = wanted[i]
        for k, (stmt, group) in enumerate(zip(body, anchors, strict=True)):
            inside = held.get(k)
            if not inside:
                continue
            first, last = group[0].lineno, group[-1].end_lineno or group[-1].lineno
            if isinstance(stmt, _BLOCKS) and isinstance(stmt.body, cst.IndentedBlock):
                # Statement by statement (a class's methods, a function's statements); what
                # is left (the header, a statement that does not check out) from the whole.
                inner = indent + len(stmt.body.indent or self.module.default_indent)
                nested = dict(inside)
                if self._place(stmt.body.body, group[0].body, inner, nested, paths, depth + 1):  # type: ignore[attr-defined]
                    for i in inside.keys() - nested.keys():
                        del wanted[i]
                    inside = nested
            if inside and not self._statement(stmt, first, last, indent, inside):
                if indent == 0:
                    return False
                continue  # the caller computes the enclosing statement
            for i in inside:
                wanted.pop(i, None)
        return True

    def _statement(
        self, stmt: cst.CSTNode, first: int, last: int, indent: int, check: dict[int, cst.CSTNode]
    ) -> bool:
        ranges = statement_ranges(stmt, self.module)
        own = ranges[stmt]
        shift = first - own.start.line
        if own.start.column != 0 or own.end.line + shift > last:
            return False
        if not indent:
            for node in check.values():
                r = ranges[node]
                self.ranges[node] = CodeRange(
                    (r.start.line + shift, r.start.column), (r.end.line + shift, r.end.column)
                )
            return True
        # Inside a class, continuation lines and multi-line strings keep their own columns:
        # only the nodes whose shifted positions match the text are taken.
        for node in check.values():
            r = ranges[node]
            found = self._shifted(node, r, shift, indent)
            if found is None:
                return False
            self.ranges[node] = found
        return True

    def _shifted(
        self, node: cst.CSTNode, r: CodeRange, shift: int, indent: int
    ) -> CodeRange | None:
        if self.offsets is None:
            self.offsets = line_offsets(self.source)
        node = unparenthesized(node)  # positions leave out the parentheses
        code = self.module.code_for_node(node).strip()
        if not code:
            return None
        head, tail = code.splitlines()[0][:40], code.splitlines()[-1][-40:]
        start, end = (r.start.line + shift, r.start.column + indent), None
        for column in (r.end.column + indent, r.end.column):
            if self._text_at(start, head, after=True) and self._text_at(
                (r.end.line + shift, column), tail, after=False
            ):
                end = (r.end.line + shift, column)
                break
        return None if end is None else CodeRange(start, end)

    def _text_at(self, where: tuple[int, int], text: str, after: bool) -> bool:
        assert self.offsets is not None
        line, column = where
        if line > len(self.offsets):
            return False
        at = self.offsets[line - 1] + column
        return self.source.startswith(text, at) if after else self.source.endswith(text, 0, at)


#: The statements whose block's statements are placed one by one (their code generated
#: alone): the rest of a long method is not generated to place one finding.
_BLOCKS = (cst.ClassDef, cst.FunctionDef)


def _paths(
    body: Sequence[cst.BaseStatement], wanted: dict[int, cst.CSTNode]
) -> dict[int, tuple[int, ...]]:
    """Where each wanted node (by id) of the statements `body` is: (i,) in
    the i-th statement, (i, j) in the j-th statement of the block of a class or function
    that is the i-th (and so on for the _BLOCKS in it: the statements Positions._place takes
    one by one). One walk for all the nodes, first of the walked fields only (a quarter of the
    nodes), then of every field for the nodes that walk did not reach; each stops once it
    has them all."""
    found: dict[int, tuple[int, ...]] = {}
    for every in (False, True):
        _find(body, wanted, every, (), found)
        if len(found) == len(wanted):
            break
    return found


def _find(
    body: Sequence[cst.CSTNode],
    wanted: dict[int, cst.CSTNode],
    every: bool,
    prefix: tuple[int, ...],
    found: dict[int, tuple[int, ...]],
) -> bool:
    """Add to `found` the wanted nodes in the statements `body` (see _paths); True once it
    has them all."""
    for k, stmt in enumerate(body):
        path = (*prefix, k)
        if isinstance(stmt, _BLOCKS) and isinstance(stmt.body, cst.IndentedBlock):
            block = stmt.body
            # The class or function without its block's statements, then each of them.
            for node in (stmt, block):
                i = id(node)
                if i in wanted and i not in found:
                    found[i] = path
                    if len(found) == len(wanted):
                        return True
            parts = [c for c in children(stmt, every) if c is not block]
            statements = {id(s) for s in block.body}
            parts += [c for c in children(block, every) if id(c) not in statements]
            if any(_collect(part, wanted, every, path, found) for part in parts):
                return True
            if _find(block.body, wanted, every, path, found):
                return True
        elif _collect(stmt, wanted, every, path, found):
            return True
    return False


def _collect(
    node: cst.CSTNode,
    wanted: dict[int, cst.CSTNode],
    every: bool,
    path: tuple[int, ...],
    found: dict[int, tuple[int, ...]],
) -> bool:
    """Add the wanted nodes of `node` and below to `found` at `path`; True once it has them
    all."""
    for n in descendants(node, every):
        i = id(n)
        if i in wanted and i not in found:
            found[i] = path
            if len(found) == len(wanted):
                return True
    return False


def statement_ranges(stmt: cst.CSTNode, module: cst.Module) -> dict[cst.CSTNode, CodeRange]:
    """PositionProvider's ranges for `stmt` and its descendants, as if it were a module of its
    own (starting at line 1, column 0): its code generated once, without the metadata
    wrapper's extra pass over the tree."""
    provider = PositionProvider()
    state = PositionProvidingCodegenState(
        default_indent=module.default_indent,
        default_newline=module.default_newline,
        provider=provider,
    )
    stmt._codegen(state)
    return provider._computed


_KINDS: dict[type, type] = {
    ast.FunctionDef: cst.FunctionDef,
    ast.AsyncFunctionDef: cst.FunctionDef,
    ast.ClassDef: cst.ClassDef,
    ast.If: cst.If,
    ast.For: cst.For,
    ast.AsyncFor: cst.For,
    ast.While: cst.While,
    ast.With: cst.With,
    ast.AsyncWith: cst.With,
    ast.Try: cst.Try,
    ast.Match: cst.Match,
}
if hasattr(ast, "TryStar"):  # Python 3.11+
    _KINDS[ast.TryStar] = cst.TryStar
#: CPython's compound statements (those with a block).
COMPOUND = tuple(_KINDS)


def _anchors(
    body: Sequence[cst.CSTNode], top: Sequence[ast.stmt]
) -> list[Sequence[ast.stmt]] | None:
    """The ast statements of each libcst statement of a block; None when the two trees do not
    line up."""
    out = []
    i = 0
    for stmt in body:
        count = len(stmt.body) if isinstance(stmt, cst.SimpleStatementLine) else 1
        group = top[i : i + count]
        if len(group) != count or _KINDS.get(type(group[0]), cst.SimpleStatementLine) is not type(
            stmt
        ):
            return None
        out.append(group)
        i += count
    return out if i == len(top) else None


def common_ends(old: Sequence[Any], new: Sequence[Any]) -> tuple[int, int]:
    """How many items two sequences (texts, lists of lines) share at their start, and then
    at their end (not overlapping the start): an edit changed what lies between."""
    limit = min(len(old), len(new))
    start = 0
    while start < limit and old[start] == new[start]:
        start += 1
    end = 0
    while end < limit - start and old[-1 - end] == new[-1 - end]:
        end += 1
    return start, end
