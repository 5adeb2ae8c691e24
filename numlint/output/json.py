"""A JSON array of findings (a stable schema: see README)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from numlint.diagnostic import Diagnostic
from numlint.output.common import RenderEnv


def render(diagnostics: Sequence[Diagnostic], env: RenderEnv) -> str:
    return json.dumps([d.to_json() for d in diagnostics], indent=2)
