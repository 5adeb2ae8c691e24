"""An edited buffer's trees, re-parsing only the top-level statements the edit touched.

An editor's buffer changes a few lines at a time, and compiling all of it again is about a
quarter of the time to re-lint it. The top-level statements wholly above the changed lines
are taken from the last tree as they are, those wholly below it with their line numbers
moved, and the lines between are parsed alone. That is the tree a parse of the whole text
gives: a top-level statement starts at column 0 on a line of its own, and text that parses
alone closes its brackets, strings and blocks. Whatever does not parse alone, and any
`__future__` import (it changes the grammar), is compiled whole, so that a syntax error is
reported as a parse of the whole text (numlint.engine.syntax_tree) reports it.

libcst's tree (`StatementParser`) is put together from top-level statements in the same way,
each one parsed once for as long as its text stays the same.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import libcst as cst

from numlint.diagnostic import Diagnostic
from numlint.positions import COMPOUND, common_ends, unit_start


class Reparser:
    """One buffer's last text and tree, to parse its next version from."""

    def __init__(self) -> None:
        self._lines: list[str] = []
        self._tree: ast.Module | None = None

    def syntax_tree(
        self, source: str, path: str, whole: Callable[[str, str], ast.Module | list[Diagnostic]]
    ) -> ast.Module | list[Diagnostic]:
        """The ast of `source` or why there is none, as `whole` (engine.syntax_tree) gives
        them for the whole text."""
        lines = source.split("\n")
        tree = self._stitched(lines, source, path) if self._tree is not None else None
        found = whole(source, path) if tree is None else tree
        if isinstance(found, ast.Module):
            self._lines, self._tree = lines, found
        else:
            self._lines, self._tree = [], None
        return found

    def _stitched(self, lines: list[str], source: str, path: str) -> ast.Module | None:
        """The tree of `lines` from the last one, or None to compile it whole. The last
        tree's statements below the edit are moved in place: that tree is not used again."""
        old, tree = self._lines, self._tree
        assert tree is not None
        if "__future__" in source or "\r" in source:
            return None  # `\r` breaks lines too
        top, bottom = common_ends(old, lines)
        if top == len(old) == len(lines):
            return tree  # the same text
        # Old lines top+1 .. len(old)-bottom changed (1-based); the rest are the same text
        # (a line here is the text between two `\n`: the last one, after the last break).
        first_changed, last_changed = top + 1, len(old) - bottom
        body = tree.body
        above = 0
        while above < len(body) and (body[above].end_lineno or 0) < first_changed:
            above += 1
        below = len(body)
        while below > above and unit_start(body[below - 1]) > last_changed:
            below -= 1
        after = body[below:]
        if after and (after[0].col_offset or _shares_line(body, below)):
            return None
        if above and _shares_line(body, above):
            return None
        by = len(lines) - len(old)
        start = (body[above - 1].end_lineno or 0) + 1 if above else 1  # first line parsed
        end = unit_start(after[0]) - 1 + by if after else len(lines)  # its last line
        middle = _parse("\n".join(lines[start - 1 : end]), path)
        if middle is None:
            return None
        _shift(middle.body, start - 1)
        _shift(after, by)
        return ast.Module(body=[*body[:above], *middle.body, *after], type_ignores=[])


def _shares_line(body: Sequence[ast.stmt], i: int) -> bool:
    """Whether statement `i` begins on the line statement `i - 1` ends on (`a = 1; b = 2`)."""
    return 0 < i < len(body) and (body[i - 1].end_lineno or 0) >= unit_start(body[i])


def _parse(text: str, path: str) -> ast.Module | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return compile(text, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)  # type: ignore[no-any-return]
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


#: Fields that never hold a node with a line (names, flags, and the shared operator and
#: context singletons), skipped when moving a tree.
_LEAF_FIELDS = frozenset(
    {"ctx", "op", "ops", "id", "attr", "arg", "name", "asname", "module", "level", "kind"}
    | {"type_comment", "is_async", "conversion"}
)
#: Per node class: (has lineno, has end_lineno, the fields that may hold nodes).
_LAYOUT: dict[type, tuple[bool, bool, tuple[str, ...]]] = {}


def _layout(cls: type) -> tuple[bool, bool, tuple[str, ...]]:
    attributes = getattr(cls, "_attributes", ())
    fields = tuple(f for f in getattr(cls, "_fields", ()) if f not in _LEAF_FIELDS)
    found = _LAYOUT[cls] = ("lineno" in attributes, "end_lineno" in attributes, fields)
    return found


def _shift(nodes: Sequence[ast.AST], by: int) -> None:
    """Move `nodes` and everything in them `by` lines down."""
    if not by:
        return
    todo: list[object] = list(nodes)
    pop, push, extend = todo.pop, todo.append, todo.extend
    node_type = ast.AST
    while todo:
        node = pop()
        cls = node.__class__
        lined, ended, fields = _LAYOUT.get(cls) or _layout(cls)
        if lined:
            node.lineno += by  # type: ignore[attr-defined]
            if ended and (end := node.end_lineno) is not None:  # type: ignore[attr-defined]
                node.end_lineno = end + by  # type: ignore[attr-defined]
        for name in fields:
            value = getattr(node, name, None)
            if value.__class__ is list:
                extend(value)  # type: ignore[arg-type]
            elif isinstance(value, node_type):
                push(value)


#: How a line that a block above can own begins (indented, even if blank).
_INDENTS = (" ", "\t", "\f")


@dataclass(frozen=True)
class _Piece:
    """A piece of a text (see _pieces) as libcst parsed it."""

    statements: tuple[cst.BaseStatement, ...]
    #: The comments and blank lines above its first statement that a module takes as its
    #: header (held in the first statement's lines where the piece is not the first).
    header: tuple[cst.EmptyLine, ...]
    #: The default indentation its blocks were parsed under.
    indent: str
    footer: tuple[cst.EmptyLine, ...]
    trailing_newline: bool


class StatementParser:
    """libcst's module of a buffer's text from its top-level statements, each parsed alone
    and kept for the next text while its text (with the blank lines and comments above it)
    stays the same. The module equals libcst's parse of the whole text: a piece is cut only
    where libcst's parse of the whole would cut it (no line of the gap between two pieces is
    indented, which a block above could own; no two statements share a line), and every
    piece holding a block agrees on the indentation libcst takes as the file's default.
    Otherwise, when most pieces are new (a buffer opened, a large paste), and for any text
    with a piece that does not parse, the whole is parsed (and cut into pieces for later)."""

    def __init__(self) -> None:
        #: The pieces parsed, by (whether the piece is the text's first, its text): what a
        #: module takes as its header is held by the first statement of a later piece.
        self._known: dict[tuple[bool, str], list[_Piece]] = {}

    def parse(
        self,
        text: str,
        top: Sequence[ast.stmt],
        lines: Sequence[int] | None,
        whole: Callable[[str], cst.Module],
    ) -> cst.Module:
        """The module of `text`, whose top-level statements are `top` (their lines those of
        the file; `lines`: the file's line of each line of `text`, None when the same);
        `whole`: libcst's parse of a text (numlint.engine.parse)."""
        pieces = _pieces(text, top, lines) if top and "\r" not in text else None
        if pieces is None:
            self._known = {}
            return whole(text)
        new = sum(1 for k, (piece, _, _) in enumerate(pieces) if (not k, piece) not in self._known)
        found = self._assembled(pieces, whole) if 2 * new <= len(pieces) else None
        if found is None:
            found = whole(text)
            self._known = _cut(found, pieces)
        return found

    def _assembled(
        self, pieces: list[tuple[str, bool, int]], whole: Callable[[str], cst.Module]
    ) -> cst.Module | None:
        known, self._known = self._known, {}
        body: list[cst.BaseStatement] = []
        indent: str | None = None
        for k, (text, block, _) in enumerate(pieces):
            # a piece the text repeats has a tree per place: a node is in one place of a tree
            kept = self._known.setdefault((not k, text), [])
            before = known.get((not k, text), ())
            if len(kept) < len(before):
                piece = before[len(kept)]
            else:
                try:
                    piece = _piece(whole(text))
                except Exception:  # said by the parse of the whole text, at its line
                    return None
            kept.append(piece)
            if block:
                if indent is None:
                    indent = piece.indent
                elif piece.indent != indent:
                    return None
            if (k < len(pieces) - 1 and piece.footer) or not piece.statements:
                return None
            first, *rest = piece.statements
            if k and piece.header:
                first = first.with_changes(leading_lines=(*piece.header, *first.leading_lines))
            body += (first, *rest)
        head = self._known[True, pieces[0][0]][0]
        return cst.Module(
            body=tuple(body),
            header=head.header,
            footer=piece.footer,
            default_indent=indent or piece.indent,
            default_newline="\n",
            has_trailing_newline=piece.trailing_newline,
        )


def _piece(module: cst.Module) -> _Piece:
    """A piece parsed alone."""
    return _Piece(
        tuple(module.body),
        tuple(module.header),
        module.default_indent,
        tuple(module.footer),
        module.has_trailing_newline,
    )


def _cut(
    module: cst.Module, pieces: list[tuple[str, bool, int]]
) -> dict[tuple[bool, str], list[_Piece]]:
    """The pieces of the whole text's `module` (none when they do not add up)."""
    body = module.body
    if sum(count for _, _, count in pieces) != len(body) or module.default_newline != "\n":
        return {}
    out: dict[tuple[bool, str], list[_Piece]] = {}
    at = 0
    for k, (text, _, count) in enumerate(pieces):
        last = k == len(pieces) - 1
        out.setdefault((not k, text), []).append(
            _Piece(
                tuple(body[at : at + count]),
                tuple(module.header) if k == 0 else (),
                module.default_indent,
                tuple(module.footer) if last else (),
                module.has_trailing_newline if last else True,
            )
        )
        at += count
    return out


def _pieces(
    text: str, top: Sequence[ast.stmt], lines: Sequence[int] | None
) -> list[tuple[str, bool, int]] | None:
    """`text` cut before each top-level statement where libcst's parse of the whole would
    cut it: each piece's text, whether it holds a compound statement, and how many of
    libcst's top-level statements it holds. None when a statement's lines cannot be found
    in `text`, or its last line is continued."""
    rows = text.split("\n")
    where = None if lines is None else {line: i + 1 for i, line in enumerate(lines)}

    def at(line: int) -> int | None:
        return line if where is None else where.get(line)

    spans: list[list[int]] = []  # [first line, last line, holds a block, libcst statements]
    for node in top:
        start, end = at(unit_start(node)), at(node.end_lineno or node.lineno)
        if start is None or end is None or rows[end - 1].endswith("\\"):
            return None  # (a statement's line continued past its end: `x = 1 \\`)
        compound = int(isinstance(node, COMPOUND))
        if spans and start <= spans[-1][1]:  # `a = 1; b = 2`: one of libcst's statements
            spans[-1][1:3] = [end, spans[-1][2] | compound]
        elif spans and any(r[:1] in _INDENTS for r in rows[spans[-1][1] : start - 1]):
            spans[-1][1:4] = [end, spans[-1][2] | compound, spans[-1][3] + 1]
        else:
            spans.append([start, end, compound, 1])
    pieces: list[tuple[str, bool, int]] = []
    begin = 0
    for k, (_, end, compound, count) in enumerate(spans):
        stop = len(rows) if k == len(spans) - 1 else end
        piece = "\n".join(rows[begin:stop]) + ("\n" if stop < len(rows) else "")
        pieces.append((piece, bool(compound), count))
        begin = stop
    return pieces
