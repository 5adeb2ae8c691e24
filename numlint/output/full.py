"""Default format: location, code and message, the source line with a caret, the fix."""

from __future__ import annotations

from collections.abc import Sequence

from numlint.diagnostic import Diagnostic
from numlint.output.common import RenderEnv, fixable, probe_note, stress_note, summary


def render(diagnostics: Sequence[Diagnostic], env: RenderEnv) -> str:
    out = []
    for d in diagnostics:
        mark = " [*]" if fixable(d, env.unsafe_fixes) else ""
        out.append(f"{d.filename}:{d.row}:{d.column}: {d.code}{mark} {d.message}")
        line = env.line(d.filename, d.row)
        if line is not None:
            gutter = str(d.row)
            pad = " " * len(gutter)
            end = d.end_column if d.end_row == d.row else len(line) + 1
            width = max(1, end - d.column)
            out.append(f"{pad} |")
            out.append(f"{gutter} | {line.expandtabs(1)}")
            out.append(f"{pad} | {' ' * (d.column - 1)}{'^' * width} {d.code}")
            if d.fix is not None:
                label = "" if d.fix.applicability == "safe" else f" ({d.fix.applicability} fix)"
                out.append(f"{pad} = help: {d.fix.message}{label}")
        if d.confidence != "high":
            out.append(f"{' ' * len(str(d.row))} = confidence: {d.confidence}")
        for f, r, c, m in d.related:
            out.append(f"{' ' * len(str(d.row))} = note: {f}:{r}:{c}: {m}")
        if (note := probe_note(d)) is not None:
            out.append(f"{' ' * len(str(d.row))} = {note}")
        if (stressed := stress_note(d)) is not None:
            out.append(f"{' ' * len(str(d.row))} = {stressed}")
        out.append("")
    out.append(summary(diagnostics, env))
    return "\n".join(out)
