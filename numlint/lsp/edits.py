"""Edits and code actions: numlint's findings as LSP diagnostics, their fixes and
`# noqa` suppressions as text edits and quick fixes, the "fix all" edit, hover text."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from functools import cache, lru_cache
from typing import Any

from lsprotocol import types as lsp
from pygls.protocol import default_converter

from numlint.diagnostic import Diagnostic, Edit
from numlint.lsp.text import TextIndex
from numlint.output.lsp import to_lsp
from numlint.positions import common_ends
from numlint.suppress import commentable_rows

logger = logging.getLogger("numlint.lsp")

FIX_ALL_KIND = f"{lsp.CodeActionKind.SourceFixAll.value}.numlint"
CONVERTER = default_converter()
_NOQA_CODES = re.compile(r"#\s*noqa:\s*[\w-]+(?:\s*,\s*[\w-]+)*", re.IGNORECASE)
_NOQA_BARE = re.compile(r"#\s*noqa(?!:)", re.IGNORECASE)


def to_diagnostic(d: Diagnostic, index: TextIndex) -> lsp.Diagnostic:
    """`numlint.output.lsp.to_lsp` as an lsprotocol Diagnostic, in the client's encoding."""
    out = CONVERTER.structure(to_lsp(d), lsp.Diagnostic)
    out.range = index.range(d.row, d.column, d.end_row, d.end_column)
    return out


def diagnostic_json(d: Diagnostic, index: TextIndex) -> dict[str, Any]:
    """`to_diagnostic` as JSON, as lsprotocol's converter writes it, without building the
    lsprotocol objects (for a file of many findings, they cost more than linting an edit)."""
    out = to_lsp(d)
    out["range"] = index.range_json(d.row, d.column, d.end_row, d.end_column)
    return out


@cache
def rule_markdown(code: str) -> str | None:
    """The rule's documentation page (Markdown), or None for codes that are not rules."""
    from numlint.rule import rule_by_selector

    rule = rule_by_selector(code)
    if rule is None:
        return None
    try:
        from numlint.docs import rule_page

        return rule_page(rule)
    except Exception:  # a page that cannot be built still gets a summary
        logger.exception("rule page for %s failed", code)
        return f"# {rule.CODE} `{rule.NAME}`\n\n> {rule.MESSAGE}\n\n{rule.docstring()}\n"


def fix_edits(d: Diagnostic, index: TextIndex) -> list[lsp.TextEdit]:
    """The diagnostic's fix as LSP text edits."""
    assert d.fix is not None
    return [edit_to_lsp(e, index) for e in d.fix.edits]


def edit_to_lsp(e: Edit, index: TextIndex) -> lsp.TextEdit:
    return lsp.TextEdit(index.range(e.row, e.column, e.end_row, e.end_column), e.content)


def replace_edit(old: str, new: str, index: TextIndex) -> lsp.TextEdit:
    """One edit turning `old` into `new`: the span between their common prefix and suffix."""
    start, end = common_ends(old, new)
    if 0 < start < len(old) and old[start - 1] == "\r" and old[start] == "\n":
        start -= 1  # never split a \r\n: LSP cannot address the point between them
    old_end, new_end = len(old) - end, len(new) - end
    if 0 < old_end < len(old) and old[old_end - 1] == "\r" and old[old_end] == "\n":
        old_end, new_end = old_end + 1, new_end + 1
    return lsp.TextEdit(
        lsp.Range(index.at_offset(start), index.at_offset(old_end)), new[start:new_end]
    )


@lru_cache(maxsize=8)
def _commentable_rows(source: str) -> frozenset[int] | None:
    """numlint.suppress.commentable_rows, kept for the last few texts (one per request)."""
    return commentable_rows(source)


def noqa_edit(d: Diagnostic, index: TextIndex) -> lsp.TextEdit | None:
    """Add `d.code` to the line's `# noqa: ...` list, or append `  # noqa: CODE`.

    The comment goes on the diagnostic's first or last row (suppressions cover both),
    preferring a row that already has a noqa list, and never on a row that ends inside a
    string or with a backslash continuation.
    """
    rows = [r for r in dict.fromkeys((d.row, d.end_row)) if r <= len(index.starts)]
    if not rows:
        return None
    safe = _commentable_rows(index.source)
    rows = [r for r in rows if safe is None or r in safe] or rows[:1]
    row = next((r for r in rows if _NOQA_CODES.search(index.line(r - 1))), rows[0])
    text = index.line(row - 1)
    found = _NOQA_CODES.search(text)
    if found is not None:
        at, insert = found.end(), f", {d.code}"
    elif _NOQA_BARE.search(text):
        return None  # a bare noqa already covers every code
    else:
        at, insert = len(text.rstrip()), f"  # noqa: {d.code}"
    pos = index.position(row, at + 1)
    return lsp.TextEdit(lsp.Range(pos, pos), insert)


def quick_fixes(
    d: Diagnostic,
    index: TextIndex,
    workspace_edit: Callable[[list[lsp.TextEdit]], lsp.WorkspaceEdit],
) -> list[lsp.CodeAction]:
    """The quick fixes of one finding: its fix (labelled when unsafe) and a `# noqa: CODE`
    suppression; `workspace_edit` wraps text edits for the finding's document."""
    diag = to_diagnostic(d, index)
    out = []
    if d.fix is not None and d.fix.edits and d.fix.applicability in ("safe", "unsafe"):
        label = " (unsafe fix)" if d.fix.applicability == "unsafe" else ""
        out.append(
            lsp.CodeAction(
                title=f"numlint ({d.code}): {d.fix.message}{label}",
                kind=lsp.CodeActionKind.QuickFix,
                diagnostics=[diag],
                is_preferred=d.fix.applicability == "safe",
                edit=workspace_edit(fix_edits(d, index)),
            )
        )
    noqa = noqa_edit(d, index)
    if noqa is not None:
        out.append(
            lsp.CodeAction(
                title=f"numlint ({d.code}): suppress with `# noqa: {d.code}`",
                kind=lsp.CodeActionKind.QuickFix,
                diagnostics=[diag],
                edit=workspace_edit([noqa]),
            )
        )
    return out
