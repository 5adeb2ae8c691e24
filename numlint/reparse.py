"""CPython's ast of an edited buffer, re-parsing only the top-level statements the edit touched.

An editor's buffer changes a few lines at a time, and compiling all of it again is about a
quarter of the time to re-lint it. The top-level statements wholly above the changed lines
are taken from the last tree as they are, those wholly below it with their line numbers
moved, and the lines between are parsed alone. That is the tree a parse of the whole text
gives: a top-level statement starts at column 0 on a line of its own, and text that parses
alone closes its brackets, strings and blocks. Whatever does not parse alone, and any
`__future__` import (it changes the grammar), is compiled whole, so that a syntax error is
reported as a parse of the whole text (numlint.engine.syntax_tree) reports it.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Callable, Sequence

from numlint.diagnostic import Diagnostic
from numlint.positions import common_ends, unit_start


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


def _shift(nodes: Sequence[ast.AST], by: int) -> None:
    """Move `nodes` and everything in them `by` lines down."""
    if not by:
        return
    todo = list(nodes)
    node_type = ast.AST
    while todo:
        node = todo.pop()
        line = getattr(node, "lineno", None)
        if line is not None:
            node.lineno = line + by  # type: ignore[attr-defined]
            end = node.end_lineno  # type: ignore[attr-defined]
            if end is not None:
                node.end_lineno = end + by  # type: ignore[attr-defined]
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                todo.extend(v for v in value if isinstance(v, node_type))
            elif isinstance(value, node_type):
                todo.append(value)
