"""Output formats: one small module per format, each with `render(diagnostics, env) -> str`
(what they share is in numlint.output.common)."""

from __future__ import annotations

from numlint.output.common import (
    RenderEnv,
    Renderer,
    fixable,
    probe_note,
    stress_note,
    summary,
)

__all__ = ["RenderEnv", "Renderer", "fixable", "formats", "probe_note", "stress_note", "summary"]


def formats() -> dict[str, Renderer]:
    from numlint.output import concise, full, github, json, lsp, sarif

    return {
        "full": full.render,
        "concise": concise.render,
        "json": json.render,
        "sarif": sarif.render,
        "github": github.render,
        "lsp": lsp.render,
    }
