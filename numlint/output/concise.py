"""One line per finding: `path:row:col: CODE message`."""

from __future__ import annotations

from collections.abc import Sequence

from numlint.diagnostic import Diagnostic
from numlint.output import RenderEnv, fixable, summary


def render(diagnostics: Sequence[Diagnostic], env: RenderEnv) -> str:
    lines = [
        f"{d.filename}:{d.row}:{d.column}: {d.code}{' [*]' if fixable(d, env.unsafe_fixes) else ''} {d.message}"
        for d in diagnostics
    ]
    lines.append(summary(diagnostics, env))
    return "\n".join(lines)
