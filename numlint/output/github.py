"""GitHub Actions workflow commands: one `::error` annotation per finding."""

from __future__ import annotations

from collections.abc import Sequence

from numlint.diagnostic import Diagnostic
from numlint.output.common import RenderEnv


def _escape(text: str, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text


def render(diagnostics: Sequence[Diagnostic], env: RenderEnv) -> str:
    return "\n".join(
        f"::error title={_escape(f'numlint ({d.code})', True)},file={_escape(d.filename, True)},"
        f"line={d.row},col={d.column},endLine={d.end_row},endColumn={d.end_column}"
        f"::{_escape(f'{d.filename}:{d.row}:{d.column}: {d.code} {d.message}')}"
        for d in diagnostics
    )
