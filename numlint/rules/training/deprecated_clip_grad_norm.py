"""NUM506 deprecated-clip-grad-norm."""

from __future__ import annotations

import libcst as cst

from numlint.rule import Invalid, Probe, Rule, Valid

_OLD = frozenset({"torch.nn.utils.clip_grad_norm", "torch.nn.utils.clip_grad.clip_grad_norm"})


class DeprecatedClipGradNorm(Rule):
    """`torch.nn.utils.clip_grad_norm` is deprecated: use `clip_grad_norm_`.

    What it does:
    Flags calls of `torch.nn.utils.clip_grad_norm(...)` (no trailing underscore) in any
    import spelling: `nn.utils.clip_grad_norm`, `from torch.nn.utils import clip_grad_norm`.

    Why is this bad?
    It emits a FutureWarning (shown once per call site by Python's default filters) and
    only forwards to the in-place `clip_grad_norm_`, whose trailing underscore says what it
    does: it rewrites `.grad`.

    Fix safety:
    Safe: the old function calls `clip_grad_norm_` with the same arguments. Attribute
    spellings get the underscore in place; an imported bare name is rewritten only when an
    import of the file reaches `clip_grad_norm_`.

    Known limitations:
    References that are not called are not flagged.

    References:
    - https://pytorch.org/docs/stable/generated/torch.nn.utils.clip_grad_norm_.html
    - [numlint hazard catalog, row 23](https://github.com/numlint/numlint/blob/main/docs/hazards.md#23)
    """

    CODE = "NUM506"
    NAME = "deprecated-clip-grad-norm"
    MESSAGE = (
        "`torch.nn.utils.clip_grad_norm` is deprecated (a FutureWarning, shown once per call "
        "site); "
        "use `torch.nn.utils.clip_grad_norm_` (same arguments)"
    )
    CHUNK = "function"
    TRIGGERS = ("clip_grad_norm",)

    VALID = [
        Valid(
            """
            import torch
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            """,
            "the current name",
        ),
        Valid(
            """
            accelerator.clip_grad_norm(model.parameters(), 1.0)
            """,
            "not torch's function",
        ),
        Valid(
            """
            def clip_grad_norm(params, max_norm):
                return max_norm
            clip_grad_norm(params, 1.0)
            """,
            "a local function of that name",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            torch.nn.utils.clip_grad_norm(model.parameters(), max_norm=1.0)
            """,
            line=2,
            column=1,
            fixed="""
            import torch
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            """,
        ),
        Invalid(
            """
            from torch import nn
            norm = nn.utils.clip_grad_norm(params, 5)
            """,
            line=2,
            column=8,
            fixed="""
            from torch import nn
            norm = nn.utils.clip_grad_norm_(params, 5)
            """,
        ),
        Invalid(
            """
            import torch
            from torch.nn.utils import clip_grad_norm
            clip_grad_norm(params, 5)
            """,
            line=3,
            column=1,
            fixed="""
            import torch
            from torch.nn.utils import clip_grad_norm
            torch.nn.utils.clip_grad_norm_(params, 5)
            """,
        ),
        Invalid(
            """
            from torch.nn.utils import clip_grad_norm
            clip_grad_norm(params, 5)
            """,
            line=2,
            column=1,
            note="no import reaches clip_grad_norm_: no fix",
        ),
    ]
    PROBE = Probe(
        scenario="deprecated-clip-grad-norm",
        note="clip_grad_norm warns and returns exactly what clip_grad_norm_ returns",
    )

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.qualname(node.func) not in _OLD:
            return
        func = node.func
        if isinstance(func, cst.Attribute):
            fix = self.fix("safe", "Use `clip_grad_norm_`", (func.attr, "clip_grad_norm_"))
        elif (new := self.ctx.spell("torch.nn.utils.clip_grad_norm_")) is not None:
            fix = self.fix("safe", f"Use `{new}`", (func, new))
        else:
            fix = None
        self.report(node, fix=fix)
