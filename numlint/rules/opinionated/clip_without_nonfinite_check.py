"""NUM901 clip-without-nonfinite-check."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from numlint.analysis.semantics import keyword
from numlint.rule import FixSpec, Invalid, Probe, Rule, Valid
from numlint.rules.training import _steps

_CLIP_NORM = frozenset(
    {
        "torch.nn.utils.clip_grad_norm_",
        "torch.nn.utils.clip_grad_norm",
        "torch.nn.utils.clip_grad.clip_grad_norm_",
        "torch.nn.utils.clip_grad.clip_grad_norm",
    }
)
_AUTOCAST = frozenset(
    {
        "torch.autocast",
        "torch.amp.autocast",
        "torch.amp.autocast_mode.autocast",
        "torch.cuda.amp.autocast",
        "torch.cpu.amp.autocast",
    }
)
_HALF_DTYPES = frozenset({"torch.float16", "torch.half", "torch.bfloat16"})
_CHECKS = frozenset(
    {
        "torch.isfinite",
        "torch.isnan",
        "torch.isinf",
        "torch.nan_to_num",
        "math.isfinite",
        "math.isnan",
        "math.isinf",
    }
)
_CHECK_METHODS = frozenset({"isfinite", "isnan", "isinf", "nan_to_num", "nan_to_num_"})
_COMMA = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
_NO_SPACE = cst.AssignEqual(
    whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
)


@dataclass(frozen=True)
class _Clip:
    call: cst.Call
    scope: int  # id of the enclosing function (or module)


class ClipWithoutNonfiniteCheck(Rule):
    """`clip_grad_norm_` on possibly non-finite gradients without `error_if_nonfinite=True`.

    What it does:
    Off by default. In a file that trains in half precision (`model.half()`,
    `.to(torch.float16)`, `.bfloat16()`) or under autocast, without a GradScaler, flags
    `clip_grad_norm_` calls that pass neither `error_if_nonfinite=True` nor sit in a
    function that checks finiteness (`torch.isfinite`, `isnan`, `isinf`, `math.isfinite`).

    Why is this bad?
    Half-precision gradients overflow to Inf. With the default `error_if_nonfinite=False`
    the total norm is Inf, the clip coefficient `max_norm / inf` is 0, and an Inf entry
    times 0 is NaN: gradients `[inf, 1, 1]` become `[nan, 0, 0]`, and the step writes NaN
    into the weights silently. A GradScaler skips such steps itself; without one, ask the
    clip to raise, or check the returned norm and skip the step.

    Fix safety:
    The fix adds `error_if_nonfinite=True`. It is unsafe: a step that silently corrupted
    the weights now raises instead.

    Known limitations:
    The half-precision evidence is file-wide, not tied to the clipped model. A GradScaler
    anywhere in the file silences the rule. bfloat16 overflows far less often than float16.

    References:
    - https://pytorch.org/docs/stable/generated/torch.nn.utils.clip_grad_norm_.html
    - [numlint hazard catalog, row 24](https://github.com/numlint/numlint/blob/main/docs/hazards.md#24)
    """

    CODE = "NUM901"
    NAME = "clip-without-nonfinite-check"
    MESSAGE = (
        "`clip_grad_norm_` on half-precision gradients turns an Inf into NaN and zeroes the "
        "rest silently; pass `error_if_nonfinite=True` or check the returned norm with "
        "`torch.isfinite` before stepping"
    )
    DEFAULT_ENABLED = False
    CHUNK = "module"
    TRIGGERS = ("clip_grad_norm",)

    VALID = [
        Valid(
            """
            import torch
            model = model.half()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)
            optimizer.step()
            """,
            "asks the clip to raise",
        ),
        Valid(
            """
            import torch
            def step(model, loss, optimizer):
                with torch.autocast("cuda"):
                    out = model(x)
                loss.backward()
                norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                if torch.isfinite(norm):
                    optimizer.step()
            """,
            "checks the returned norm",
        ),
        Valid(
            """
            import torch
            scaler = torch.amp.GradScaler("cuda")
            with torch.autocast("cuda"):
                loss = model(x)
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
            """,
            "a GradScaler skips non-finite steps",
        ),
        Valid(
            """
            import torch
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            """,
            "float32 training",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            model = model.half()
            loss = model(x).sum()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            """,
            line=5,
            column=1,
            fixed="""
            import torch
            model = model.half()
            loss = model(x).sum()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)
            optimizer.step()
            """,
        ),
        Invalid(
            """
            import torch
            from torch.nn.utils import clip_grad_norm_
            def train_step(model, batch, optimizer):
                with torch.autocast(device_type="cuda", dtype=torch.float16):
                    loss = model(batch)
                loss.backward()
                clip_grad_norm_(model.parameters(), max_norm=1.0)
                optimizer.step()
            """,
            line=7,
            column=5,
            fixed="""
            import torch
            from torch.nn.utils import clip_grad_norm_
            def train_step(model, batch, optimizer):
                with torch.autocast(device_type="cuda", dtype=torch.float16):
                    loss = model(batch)
                loss.backward()
                clip_grad_norm_(model.parameters(), max_norm=1.0, error_if_nonfinite=True)
                optimizer.step()
            """,
            note="autocast without a GradScaler",
        ),
        Invalid(
            """
            import torch
            model.to(device, dtype=torch.bfloat16)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=False)
            """,
            line=3,
            column=1,
            fixed="""
            import torch
            model.to(device, dtype=torch.bfloat16)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)
            """,
            note="an explicit False",
        ),
    ]
    PROBE = Probe(
        scenario="clip-nonfinite-grad",
        note=(
            "gradient [inf, 1, 1], max_norm=1: clip_grad_norm_ leaves [nan, 0, 0]; with "
            "error_if_nonfinite=True it raises"
        ),
    )

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._clips: list[_Clip] = []
        self._checked: set[int] = set()
        self._half = False

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        _steps.tracker(ctx).note(node)
        scope = id(ctx.function or ctx.module)
        qual = ctx.qualname(node.func)
        if qual in _CLIP_NORM:
            flag = keyword(node, "error_if_nonfinite")
            if flag is None or (isinstance(flag, cst.Name) and flag.value == "False"):
                self._clips.append(_Clip(node, scope))
        elif qual in _CHECKS:
            self._checked.add(scope)
        elif qual in _AUTOCAST:
            self._half = True
        elif qual is None and isinstance(node.func, cst.Attribute):
            method = node.func.attr.value
            if method in _CHECK_METHODS:
                self._checked.add(scope)
            elif (method in ("half", "bfloat16") and not node.args) or (
                method == "to" and any(ctx.qualname(a.value) in _HALF_DTYPES for a in node.args)
            ):
                self._half = True

    def leave_Module(self, node: cst.Module) -> None:
        if not self._half or _steps.tracker(self.ctx).scalers:
            return
        for clip in self._clips:
            if clip.scope not in self._checked:
                self.report(clip.call, fix=self._fix(clip.call))

    def _fix(self, call: cst.Call) -> FixSpec | None:
        if any(a.star for a in call.args):
            return None
        true = cst.Name("True")
        args = list(call.args)
        for i, arg in enumerate(args):
            if arg.keyword is not None and arg.keyword.value == "error_if_nonfinite":
                args[i] = arg.with_changes(value=true)
                break
        else:
            flag = cst.Arg(true, keyword=cst.Name("error_if_nonfinite"), equal=_NO_SPACE)
            if args:
                if args[-1].comma is not cst.MaybeSentinel.DEFAULT:
                    flag = flag.with_changes(comma=args[-1].comma)
                args[-1] = args[-1].with_changes(comma=_COMMA)
            args.append(flag)
        code = self.ctx.code(call.with_changes(args=args))
        return self.fix("unsafe", "Pass `error_if_nonfinite=True`", (call, code))
