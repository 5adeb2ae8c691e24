"""`numlint lsp`'s options and their defaults (no optional dependency: `numlint lsp --help`
works without pygls)."""

from __future__ import annotations

import argparse

#: Wait this long after the last change before linting.
DEBOUNCE_MS = 50
DEBOUNCE_S = DEBOUNCE_MS / 1000
#: Larger buffers are left to `numlint check`: linting them would stall the editor.
MAX_CHARS = 1_000_000


def parser() -> argparse.ArgumentParser:
    """`numlint lsp`'s options (shown by `--help` even without the `lsp` extra)."""
    parser = argparse.ArgumentParser(
        prog="numlint lsp",
        description="The numlint language server on stdio "
        "(needs the `lsp` extra: pip install 'numlint[lsp]').",
    )
    parser.add_argument("--stdio", action="store_true", help="serve on stdio (the default)")
    parser.add_argument(
        "--debounce",
        type=float,
        default=DEBOUNCE_MS,
        metavar="MS",
        help=f"wait this long after the last change before linting (default: {DEBOUNCE_MS})",
    )
    parser.add_argument(
        "--max-chars",
        type=int,
        default=MAX_CHARS,
        metavar="N",
        help=f"leave buffers larger than this to `numlint check` (default: {MAX_CHARS})",
    )
    parser.add_argument(
        "--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"]
    )
    return parser
