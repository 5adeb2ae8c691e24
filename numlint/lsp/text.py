"""Text and positions: numlint's 1-based character columns and LSP positions in the
negotiated encoding (UTF-8, UTF-16 or UTF-32), with LSP's line breaks; `file:` URIs."""

from __future__ import annotations

from bisect import bisect_right
from typing import Any
from urllib.parse import urlparse
from urllib.request import url2pathname

from lsprotocol import types as lsp

from numlint.positions import LINE_BREAK


def _units(text: str, encoding: str) -> int:
    """Length of `text` in code units of the LSP position encoding."""
    if encoding == lsp.PositionEncodingKind.Utf32 or text.isascii():
        return len(text)
    if encoding == lsp.PositionEncodingKind.Utf8:
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text) + sum(1 for c in text if ord(c) > 0xFFFF)


def _chars(text: str, units: int, encoding: str) -> int:
    """How many characters of `text` its first `units` code units span (clamped)."""
    if encoding == lsp.PositionEncodingKind.Utf32 or text.isascii():
        return max(0, min(units, len(text)))
    count = 0
    for i, c in enumerate(text):
        if count >= units:
            return i
        count += _units(c, encoding)
    return len(text)


class TextIndex:
    """Maps numlint's 1-based (row, column-in-characters) positions and string offsets to
    LSP positions in the negotiated encoding, with LSP's line breaks (\\r\\n, \\r, \\n)."""

    def __init__(self, source: str, encoding: str = lsp.PositionEncodingKind.Utf16) -> None:
        self.source = source
        self.encoding = encoding
        self.starts = [0] + [m.end() for m in LINE_BREAK.finditer(source)]

    def line(self, index: int) -> str:
        """The 0-based line `index`, without its line break."""
        end = self.starts[index + 1] if index + 1 < len(self.starts) else len(self.source)
        return self.source[self.starts[index] : end].rstrip("\r\n")

    def place(self, row: int, column: int) -> tuple[int, int]:
        """The LSP (line, character) of numlint's 1-based (row, column)."""
        if row > len(self.starts):
            last = len(self.starts) - 1
            return last, _units(self.line(last), self.encoding)
        line = max(row, 1) - 1
        return line, _units(self.line(line)[: max(column, 1) - 1], self.encoding)

    def position(self, row: int, column: int) -> lsp.Position:
        return lsp.Position(*self.place(row, column))

    def range(self, row: int, column: int, end_row: int, end_column: int) -> lsp.Range:
        return lsp.Range(self.position(row, column), self.position(end_row, end_column))

    def range_json(self, row: int, column: int, end_row: int, end_column: int) -> dict[str, Any]:
        """`range` as JSON (what lsprotocol's converter makes of it)."""
        line, character = self.place(row, column)
        end_line, end_character = self.place(end_row, end_column)
        return {
            "start": {"line": line, "character": character},
            "end": {"line": end_line, "character": end_character},
        }

    def point(self, position: lsp.Position) -> tuple[int, int]:
        """The 1-based (row, column) of an LSP position, clamped to the text."""
        if position.line >= len(self.starts):
            last = len(self.starts) - 1
            return last + 1, len(self.line(last)) + 1
        text = self.line(max(position.line, 0))
        return position.line + 1, _chars(text, position.character, self.encoding) + 1

    def at_offset(self, offset: int) -> lsp.Position:
        line = bisect_right(self.starts, offset) - 1
        return self.position(line + 1, offset - self.starts[line] + 1)


def uri_to_path(uri: str) -> str | None:
    """The filesystem path of a `file:` URI; None for other schemes or malformed URIs."""
    try:
        parts = urlparse(uri)
    except ValueError:
        return None
    if parts.scheme != "file" or not parts.path:
        return None
    path = url2pathname(parts.path)
    if parts.netloc and parts.netloc != "localhost":
        path = f"//{parts.netloc}{path}"
    return None if "\x00" in path else path
