"""One line per finding: `path:row:col: CODE message`."""

from __future__ import annotations

from collections.abc import Sequence

from numlint.diagnostic import Diagnostic
from numlint.output.common import RenderEnv, fixable, probe_note, stress_note, summary


def render(diagnostics: Sequence[Diagnostic], env: RenderEnv) -> str:
    lines = []
    for d in diagnostics:
        mark = " [*]" if fixable(d, env.unsafe_fixes) else ""
        note = probe_note(d)
        tail = f" [{note}]" if note else ""
        if (stressed := stress_note(d)) is not None:
            tail += f" [{stressed}]"
        if d.confidence != "high":
            tail += f" [confidence: {d.confidence}]"
        lines.append(f"{d.filename}:{d.row}:{d.column}: {d.code}{mark} {d.message}{tail}")
    lines.append(summary(diagnostics, env))
    return "\n".join(lines)
