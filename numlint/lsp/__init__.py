"""Language server: `numlint lsp` (pygls 2 with lsprotocol types, on stdio).

- numlint.lsp.text: text and positions (LSP position encodings, line breaks, URIs);
- numlint.lsp.edits: findings as diagnostics, fixes and suppressions as edits and code
  actions, hover text;
- numlint.lsp.server: the server and its features;
- numlint.lsp.options: `numlint lsp`'s options and defaults.

This module needs no optional dependency: `numlint lsp --help` works without pygls.
"""

from __future__ import annotations

from numlint.lsp.options import DEBOUNCE_MS, DEBOUNCE_S, MAX_CHARS, parser

__all__ = ["DEBOUNCE_MS", "DEBOUNCE_S", "MAX_CHARS", "main", "parser"]


def main(argv: list[str]) -> int:
    """`numlint lsp [--stdio] [--debounce MS] [--max-chars N] [--log-level LEVEL]`: exit 2
    for a bad flag, 0 after `--help`, else serve (needs the `lsp` extra)."""
    try:
        args = parser().parse_args(argv)
    except SystemExit as exc:
        return 0 if exc.code in (0, None) else 2
    from numlint.lsp.server import serve  # pygls and lsprotocol: the `lsp` extra

    return serve(args)
