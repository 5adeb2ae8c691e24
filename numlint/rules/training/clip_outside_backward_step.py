"""NUM501 clip-outside-backward-step."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from numlint.analysis.context import Context
from numlint.analysis.gradients import based_on
from numlint.rule import Invalid, Probe, Valid
from numlint.rules.training import _steps

_WHERE = {
    "before-backward": "before `backward()`, so it clips the previous gradients",
    "after-step": "after `optimizer.step()`, so the update already used the unclipped gradients",
    "after-zero-grad": "after `zero_grad()`, so there are no gradients left to clip",
    "in-training-step": (
        "in a LightningModule's `training_step`, which Lightning runs before `backward()`, so "
        "it clips the previous step's gradients (or none)"
    ),
}


class ClipOutsideBackwardStep(_steps.StepRule):
    """Gradient clipping placed where it has no effect: clip between `backward()` and `step()`.

    What it does:
    Follows the statements of a training loop body or a step function (`for` / `while` loops,
    `train_step` / `training_step` methods, module-level scripts), through `with` blocks,
    `if` / `else` branches and calls of helper methods of the same class, and flags
    `torch.nn.utils.clip_grad_norm_` / `clip_grad_value_` when it runs before the
    iteration's `backward()`, after its `optimizer.step()` / `scaler.step(optimizer)`, or
    after its `zero_grad()`. A loop that steps at its top (`clip; step; zero_grad; backward`)
    is correct and stays silent, as does gradient accumulation. In the `training_step` of a
    LightningModule that leaves optimisation to Lightning (no `automatic_optimization`
    setting, no `manual_backward`), a clip runs before the backward Lightning calls on the
    returned loss.

    Why is this bad?
    Clipping rewrites the `.grad` tensors in place. Before `backward()` it clips gradients
    that are about to be zeroed or overwritten; after `step()` the parameters were already
    updated with the unclipped gradients; after `zero_grad()` there is nothing left. Training
    runs without error but without clipping: with gradients `[30, 40]` and `max_norm=1` the
    update has norm 50 where 1 was asked.

    Known limitations:
    Only the order inside one function (plus helpers of the same class or module it calls
    by name) is seen; a step spread over callbacks of a framework is not followed. When
    several optimizers are used, a `step()` or `zero_grad()` only counts if it concerns the
    clipped gradients (same optimizer, or the module whose parameters are clipped).
    Conditions are not evaluated: two `if` statements on the same flag are treated as
    independent, and a step or `zero_grad()` counts only when it runs on every path to
    the clip (not one on a recovery branch or in an `except` handler).

    References:
    - https://pytorch.org/docs/stable/generated/torch.nn.utils.clip_grad_norm_.html
    - https://pytorch.org/docs/stable/notes/amp_examples.html#gradient-clipping
    - [numlint hazard catalog, row 22](https://github.com/numlint/numlint/blob/main/docs/hazards.md#22)
    """

    CODE = "NUM501"
    NAME = "clip-outside-backward-step"
    MESSAGE = (
        "gradient clipping outside backward -> step has no effect on the update; "
        "call it after `loss.backward()` (and `scaler.unscale_(optimizer)`) "
        "and before `optimizer.step()`"
    )
    TRIGGERS = ("clip_grad",)
    NEEDS_TORCH = False  # the scaler or optimizer may come from elsewhere

    VALID = [
        Valid(
            """
            import torch
            for x, y in loader:
                optimizer.zero_grad()
                loss = criterion(model(x), y)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
            """,
            "the standard order: zero_grad, backward, clip, step",
        ),
        Valid(
            """
            import torch
            from torch.nn.utils import clip_grad_norm_
            for i, (x, y) in enumerate(loader):
                with torch.autocast("cuda"):
                    loss = model(x, y) / accum
                scaler.scale(loss).backward()
                if (i + 1) % accum == 0:
                    scaler.unscale_(optimizer)
                    clip_grad_norm_(model.parameters(), 1.0)
                    scaler.step(optimizer)
                    scaler.update()
                    optimizer.zero_grad()
            """,
            "gradient accumulation with AMP",
        ),
        Valid(
            """
            import torch
            class Trainer:
                def train_step(self, batch):
                    loss = self.model(batch)
                    loss.backward()
                    self.clip_and_step()
                def clip_and_step(self):
                    torch.nn.utils.clip_grad_value_(self.model.parameters(), 0.5)
                    self.optimizer.step()
                    self.optimizer.zero_grad()
            """,
            "a step split over two methods of one class",
        ),
        Valid(
            """
            import torch
            for batch in loader:
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                optimizer.zero_grad()
                model(batch).backward()
            """,
            "a loop that steps at its top: the clip acts on the previous backward",
        ),
        Valid(
            """
            import torch
            d_loss.backward()
            g_loss.backward()
            opt_d.step()
            torch.nn.utils.clip_grad_norm_(G.parameters(), 1.0)
            opt_g.step()
            """,
            "a step of another optimizer before the clip",
        ),
        Valid(
            """
            import torch
            import lightning as L
            class Model(L.LightningModule):
                def on_before_optimizer_step(self, optimizer):
                    torch.nn.utils.clip_grad_norm_(self.parameters(), 1.0)
            """,
            "Lightning's hook runs between backward and step",
        ),
        Valid(
            """
            import torch
            if use_amp:
                loss.backward()
                optimizer.step()
            else:
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
            """,
            "the step of the other branch does not precede the clip",
        ),
        Valid(
            """
            import torch
            for batch in loader:
                loss = model(batch)
                accelerator.backward(loss)
                accelerator.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                lr_scheduler.step()
                optimizer.zero_grad()
            """,
            "Accelerate's clip unscales and runs in the right place",
        ),
        Valid(
            """
            import torch
            class Fitter:
                def warm_up(self):
                    for _ in range(10):
                        self.opt.zero_grad()
                        self.loss().backward()
                        self.opt.step()
                def train_step(self):
                    self.opt.zero_grad()
                    loss = self.loss()
                    loss.backward()
                    if not torch.isfinite(loss):
                        self.warm_up()
                    torch.nn.utils.clip_grad_norm_(self.params, 1.0)
                    self.opt.step()
            """,
            "a step on a recovery branch only: the usual path clips after backward",
        ),
        Valid(
            """
            import torch
            for batch in loader:
                try:
                    model(batch).backward()
                except RuntimeError:
                    optimizer.zero_grad()
                    break
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                optimizer.zero_grad()
            """,
            "zero_grad in an `except` handler that leaves the loop",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            for x, y in loader:
                optimizer.zero_grad()
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            """,
            line=7,
            column=5,
            note="after step",
        ),
        Invalid(
            """
            from torch.nn.utils import clip_grad_norm_
            def train_step(model, batch, optimizer):
                loss = model(batch)
                clip_grad_norm_(model.parameters(), max_norm=1.0)
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
            """,
            line=4,
            column=5,
            note="before backward",
        ),
        Invalid(
            """
            import torch.nn as nn
            for batch in loader:
                loss = model(batch)
                loss.backward()
                optimizer.zero_grad()
                nn.utils.clip_grad_value_(model.parameters(), 0.5)
                optimizer.step()
            """,
            line=6,
            column=5,
            note="after zero_grad",
        ),
        Invalid(
            """
            import torch
            class LitModel:
                def training_step(self, batch, batch_idx):
                    opt = self.optimizers()
                    loss = self.compute_loss(batch)
                    self.manual_backward(loss)
                    opt.step()
                    with torch.no_grad():
                        if self.clip:
                            torch.nn.utils.clip_grad_norm_(self.parameters(), 1.0)
                    opt.zero_grad()
            """,
            line=10,
            column=17,
            note="inside `with` and `if` blocks of a method",
        ),
        Invalid(
            """
            import torch
            class Trainer:
                def fit(self):
                    for batch in self.loader:
                        self.scaler.scale(self.model(batch)).backward()
                        self.scaler.step(self.optimizer)
                        self.scaler.update()
                        self.clip()
                def clip(self):
                    torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            """,
            line=10,
            column=9,
            note="a helper method called after the scaler step",
        ),
    ]
    INVALID += [
        Invalid(
            """
            import torch
            import lightning as L
            class Model(L.LightningModule):
                def training_step(self, batch, batch_idx):
                    loss = self.model(batch).mean()
                    torch.nn.utils.clip_grad_norm_(self.parameters(), 1.0)
                    return loss
            """,
            line=6,
            column=9,
            note="Lightning calls backward after training_step returns",
        ),
    ]
    VALID += [
        Valid(
            """
            import torch
            import lightning as L
            class Model(L.LightningModule):
                def __init__(self):
                    super().__init__()
                    self.automatic_optimization = False
                def training_step(self, batch, batch_idx):
                    opt = self.optimizers()
                    self.manual_backward(self.model(batch).mean())
                    torch.nn.utils.clip_grad_norm_(self.parameters(), 1.0)
                    opt.step()
                    opt.zero_grad()
            """,
            "manual optimisation: the clip follows manual_backward",
        ),
        Valid(
            """
            import torch
            class Loop:
                def training_step(self, batch):
                    torch.nn.utils.clip_grad_norm_(self.parameters(), 1.0)
                    return batch
            """,
            "a `training_step` of a class that is not a LightningModule",
        ),
    ]
    PROBE = Probe(
        scenario="clip-order",
        note=(
            "three steps on gradients k*[30, 40], max_norm=1: clipping before backward measures "
            "no gradients or the previous step's, clipping after step clips gradients that "
            "zero_grad() drops before use; every update is unclipped (50, 100, 150), "
            "clipping after backward gives 1"
        ),
    )

    def check(self, t: _steps.StepTracker, seq: list[_steps.Event]) -> Iterator[tuple]:
        yield from _steps.misplaced_clips(self.ctx, seq)
        if any(e.kind in _steps.BACKWARDS + _steps.STEPS for e in seq):
            return
        if any(_automatic_training_step(self.ctx, t, e.function) for e in seq):
            for e in seq:
                if e.kind == _steps.CLIP:
                    yield e, "in-training-step"

    def found(self, clip: _steps.Event, where: str) -> None:
        if where == "in-training-step":
            message = (
                f"gradient clipping {_WHERE[where]}: it has no effect; pass "
                "`gradient_clip_val` to the Trainer or clip in `on_before_optimizer_step`"
            )
        else:
            message = (
                f"gradient clipping {_WHERE[where]}: it has no effect; call it after "
                "`loss.backward()` (and `scaler.unscale_(optimizer)`) and before "
                "`optimizer.step()`"
            )
        self.report(clip.call, message)


def _automatic_training_step(ctx: Context, t: _steps.StepTracker, function: cst.CSTNode) -> bool:
    """`function` is the `training_step` of a LightningModule that leaves backward and the
    optimizer step to Lightning (no `automatic_optimization` setting in the class): Lightning
    calls backward on what it returns, after it returns."""
    if not isinstance(function, cst.FunctionDef) or function.name.value != "training_step":
        return False
    cls = t.owner.get(id(function))
    return (
        cls is not None
        and based_on(ctx, cls, "LightningModule")
        and "automatic_optimization" not in ctx.code(cls)
    )
