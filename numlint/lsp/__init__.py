"""Language server: `numlint lsp` (pygls 2 with lsprotocol types, on stdio).

- numlint.lsp.text: text and positions (LSP position encodings, line breaks, URIs);
- numlint.lsp.edits: findings as diagnostics, fixes and suppressions as edits and code
  actions, hover text;
- numlint.lsp.server: the server and its features.

This module needs no optional dependency: `numlint lsp --help` works without pygls.
"""

from __future__ import annotations

from numlint.cli import LSP_DEBOUNCE_MS, LSP_MAX_CHARS, lsp_parser

DEBOUNCE_S = LSP_DEBOUNCE_MS / 1000
#: Larger buffers are left to `numlint check`: linting them would stall the editor.
MAX_CHARS = LSP_MAX_CHARS


def main(argv: list[str]) -> int:
    """`numlint lsp [--stdio] [--debounce MS] [--max-chars N] [--log-level LEVEL]`."""
    try:
        args = lsp_parser().parse_args(argv)
    except SystemExit as exc:
        return 0 if exc.code in (0, None) else 2
    from numlint.lsp.server import serve  # pygls and lsprotocol: the `lsp` extra

    return serve(args)
