"""What every output format shares: the render environment, notes and the closing summary."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from numlint.diagnostic import Diagnostic


@dataclass
class RenderEnv:
    """What a format may need besides the findings."""

    #: Source text of a checked file, by the filename diagnostics carry.
    sources: dict[str, str] = field(default_factory=dict)
    #: Every checked file, findings or not.
    files: list[str] = field(default_factory=list)
    unsafe_fixes: bool = False
    fixed: int = 0

    def line(self, filename: str, row: int) -> str | None:
        text = self.sources.get(filename)
        if text is None:
            return None
        lines = text.splitlines()
        return lines[row - 1] if 0 < row <= len(lines) else None


Renderer = Callable[[Sequence[Diagnostic], RenderEnv], str]


def probe_note(d: Diagnostic) -> str | None:
    """`probe: confirmed (float16: ...)` when `check --probe` judged the finding."""
    probe = d.extra.get("probe")
    if not probe:
        return None
    evidence = f" ({probe['evidence']})" if probe.get("evidence") else ""
    return f"probe: {probe['verdict']}{evidence}"


def stress_note(d: Diagnostic) -> str | None:
    """`stress: confirmed: in your model: zero rows (float16)` when a stress report judged
    the finding (`check --stress-report`)."""
    stress = d.extra.get("stress")
    if not stress:
        return None
    return f"stress: {stress['verdict']} {stress['evidence']}"


def fixable(d: Diagnostic, unsafe: bool) -> bool:
    return d.fix is not None and d.fix.applicability in (
        ("safe", "unsafe") if unsafe else ("safe",)
    )


def summary(diagnostics: Sequence[Diagnostic], env: RenderEnv) -> str:
    """ruff-style closing lines: counts, and how many --fix would repair."""
    lines = []
    n = len(diagnostics)
    if env.fixed:
        total = n + env.fixed
        lines.append(f"Found {total} error{'s' * (total != 1)} ({env.fixed} fixed, {n} remaining).")
    elif n:
        lines.append(f"Found {n} error{'s' * (n != 1)}.")
    if n:
        safe = sum(fixable(d, False) for d in diagnostics)
        unsafe = sum(fixable(d, True) for d in diagnostics) - safe
        if safe:
            lines.append(f"[*] {safe} fixable with the `--fix` option.")
        if unsafe:
            lines.append(
                f"{unsafe} hidden fix{'es' * (unsafe != 1)} can be enabled with the "
                "`--unsafe-fixes` option."
            )
    elif not env.fixed:
        lines.append("All checks passed!")
    return "\n".join(lines)
