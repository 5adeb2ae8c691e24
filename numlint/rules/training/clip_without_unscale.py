"""NUM502 clip-without-unscale."""

from __future__ import annotations

from collections.abc import Iterator

from numlint.analysis.evidence import project_mentions
from numlint.rule import FixSpec, Invalid, Probe, Valid
from numlint.rules.training import _steps


class ClipWithoutUnscale(_steps.StepRule):
    """Clipping AMP-scaled gradients: call `scaler.unscale_(optimizer)` before the clip.

    What it does:
    Flags `clip_grad_norm_` / `clip_grad_value_` when the gradients come from
    `scaler.scale(loss).backward()` (a `GradScaler`, also one stored on `self`) and no
    `scaler.unscale_(optimizer)` runs between that backward and the clip, following the
    statements of the loop body or step function through `with` blocks, branches and helper
    methods of the same class.

    Why is this bad?
    Under a GradScaler the gradients are multiplied by the loss scale (65,536 at the start).
    The clip then measures a norm 65,536 times too large and shrinks the gradients by that
    factor; `scaler.step` divides by the scale again, so the update ends up about 65,536
    times too small (1.2e-5 instead of 0.8 with `max_norm=1`). Nothing fails: the model
    just barely learns.

    Fix safety:
    The fix inserts `scaler.unscale_(optimizer)` on its own line right before the clip, using
    the scaler and the optimizer of the `scaler.step(...)` that follows. It is unsafe: the
    update changes (it becomes the intended one). No fix when the clip is not a statement of
    its own or the following `scaler.step(...)` is in another function.

    Also flags a clip in a function that receives its gradients from a caller (no
    backward before it there) and then calls `scaler.step(opt)` on a GradScaler (one
    annotated as such counts), when nothing in the project calls `unscale_`: medium, no fix.

    Known limitations:
    Only the order inside one function (plus helpers of the same class or module it calls)
    is seen. Conditions are not evaluated: an `unscale_` in any branch before the clip
    silences the rule (also in the other arm of an `if` that holds the clip, which makes
    this arm the path without a scale), and a clip reached only when the scaler is disabled
    is otherwise still flagged.
    A scaler built with `enabled=False` is ignored.

    References:
    - https://pytorch.org/docs/stable/notes/amp_examples.html#gradient-clipping
    - https://pytorch.org/docs/stable/amp.html#torch.amp.GradScaler.unscale_
    - [numlint hazard catalog, row 21](https://github.com/numlint/numlint/blob/main/docs/hazards.md#21)
    """

    CODE = "NUM502"
    NAME = "clip-without-unscale"
    MESSAGE = (
        "clipping gradients still multiplied by the GradScaler's loss scale shrinks the update "
        "about 65,536 times; call `scaler.unscale_(optimizer)` right before the clip"
    )
    TRIGGERS = ("clip_grad",)
    NEEDS_TORCH = False  # the scaler or optimizer may come from elsewhere

    VALID = [
        Valid(
            """
            import torch
            class Updater:
                def step(self, grad_scaler: torch.amp.GradScaler):
                    torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
                    grad_scaler.step(self.optimizer)
            def train(updater, scaler, loss):
                scaler.scale(loss).backward()
                scaler.unscale_(updater.optimizer)
                updater.step(scaler)
            """,
            "the caller unscales before handing the gradients over",
        ),
        Valid(
            """
            import torch
            scaler = torch.amp.GradScaler("cuda")
            for x in loader:
                optimizer.zero_grad()
                with torch.autocast("cuda"):
                    loss = model(x)
                scaler.scale(loss).backward()
                scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                scaler.step(optimizer)
                scaler.update()
            """,
            "unscale_ before the clip",
        ),
        Valid(
            """
            import torch
            for x in loader:
                loss = model(x)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
            """,
            "no GradScaler",
        ),
        Valid(
            """
            import torch
            class Trainer:
                def backward(self, loss):
                    if self.scaler is not None:
                        self.scaler.scale(loss).backward()
                    else:
                        loss.backward()
                def step(self, loss):
                    self.backward(loss)
                    if self.scaler is not None:
                        self.scaler.unscale_(self.optimizer)
                    torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
                    if self.scaler is not None:
                        self.scaler.step(self.optimizer)
                        self.scaler.update()
            """,
            "unscale_ in a branch, backward in a helper method",
        ),
        Valid(
            """
            import torch
            accelerator.backward(loss)
            accelerator.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            """,
            "Accelerate unscales inside its own clip",
        ),
        Valid(
            """
            import torch
            scaler = torch.cuda.amp.GradScaler(enabled=False)
            scaler.scale(loss).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
            """,
            "a disabled scaler does not scale",
        ),
        Valid(
            """
            import torch
            if use_amp:
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            else:
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
            """,
            "the scaled backward is in the other branch",
        ),
        Valid(
            """
            import torch
            scaler.scale(loss).backward()
            if amp_enabled and device == "cuda":
                scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            else:
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
            """,
            "the other arm unscales: this one is the path without a scale",
        ),
        Valid(
            """
            import torch
            with amp.scale_loss(loss, optimizer) as scaled_loss:
                scaled_loss.backward()
            torch.nn.utils.clip_grad_norm_(amp.master_params(optimizer), 1.0)
            """,
            "apex's scale_loss unscales when its block ends",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            from typing import Optional
            class Updater:
                def step(self, grad_scaler: Optional[torch.cuda.amp.GradScaler] = None):
                    torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
                    if grad_scaler is not None:
                        grad_scaler.step(self.optimizer)
                        grad_scaler.update()
                    else:
                        self.optimizer.step()
            """,
            line=5,
            column=9,
            confidence="medium",
            note="gradients handed over by a caller, a scaler step after the clip, and no "
            "`unscale_` anywhere in the project",
        ),
        Invalid(
            """
            import torch
            scaler = torch.amp.GradScaler("cuda")
            for x in loader:
                optimizer.zero_grad()
                with torch.autocast("cuda"):
                    loss = model(x)
                scaler.scale(loss).backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                scaler.step(optimizer)
                scaler.update()
            """,
            line=8,
            column=5,
            fixed="""
            import torch
            scaler = torch.amp.GradScaler("cuda")
            for x in loader:
                optimizer.zero_grad()
                with torch.autocast("cuda"):
                    loss = model(x)
                scaler.scale(loss).backward()
                scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                scaler.step(optimizer)
                scaler.update()
            """,
        ),
        Invalid(
            """
            from torch.nn.utils import clip_grad_norm_
            class Trainer:
                def train_step(self, batch):
                    with self.autocast():
                        loss = self.model(batch)
                    self.scaler.scale(loss).backward()
                    if self.max_norm:
                        norm = clip_grad_norm_(self.model.parameters(), self.max_norm)
                    self.scaler.step(self.opt)
                    self.scaler.update()
            """,
            line=8,
            column=20,
            fixed="""
            from torch.nn.utils import clip_grad_norm_
            class Trainer:
                def train_step(self, batch):
                    with self.autocast():
                        loss = self.model(batch)
                    self.scaler.scale(loss).backward()
                    if self.max_norm:
                        self.scaler.unscale_(self.opt)
                        norm = clip_grad_norm_(self.model.parameters(), self.max_norm)
                    self.scaler.step(self.opt)
                    self.scaler.update()
            """,
            note="the scaler stored on self; the clip inside an `if`",
        ),
        Invalid(
            """
            import torch.nn as nn
            for i, batch in enumerate(loader):
                scaled = scaler.scale(model(batch) / accum)
                scaled.backward()
                if (i + 1) % accum == 0:
                    nn.utils.clip_grad_value_(model.parameters(), 0.1)
                    scaler.step(opt)
                    scaler.update()
                    opt.zero_grad()
            """,
            line=6,
            column=9,
            fixed="""
            import torch.nn as nn
            for i, batch in enumerate(loader):
                scaled = scaler.scale(model(batch) / accum)
                scaled.backward()
                if (i + 1) % accum == 0:
                    scaler.unscale_(opt)
                    nn.utils.clip_grad_value_(model.parameters(), 0.1)
                    scaler.step(opt)
                    scaler.update()
                    opt.zero_grad()
            """,
            note="gradient accumulation; the scaled loss through a variable",
        ),
        Invalid(
            """
            import torch
            def backward_and_clip(scaler, loss, model):
                scaler.scale(loss).backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            """,
            line=4,
            column=5,
            note="no scaler.step visible: no optimizer to name, so no fix",
        ),
    ]
    PROBE = Probe(
        scenario="clip-without-unscale",
        note=(
            "three GradScaler(init_scale=65536) steps on a gradient of norm 0.5, max_norm=1: "
            "without unscale_ the clip fires on every step (it measures 3.3e4) and the update "
            "is 1.5e-5; with unscale_ it never fires and the update is 0.5"
        ),
    )

    def check(self, t: _steps.StepTracker, seq: list[_steps.Event]) -> Iterator[tuple]:
        yield from ((clip, (step, False)) for clip, _, step in _steps.unscaled_clips(t, seq))
        if project_mentions(self.ctx, "unscale_("):
            return  # some caller may unscale before handing the gradients over
        for clip, step in _steps.clips_before_scaler_step(seq):
            yield clip, (step, True)

    def found(self, clip: _steps.Event, detail: tuple[_steps.Event | None, bool]) -> None:
        step, handed = detail
        message = None
        if handed and step is not None:
            message = (
                f"{self.MESSAGE}: `{step.receiver}.step(...)` follows this clip, and nothing "
                "in the project calls `unscale_`, so the gradients it receives are scaled"
            )
        if handed:  # the scaler comes from a caller and may be None: no automatic edit
            self.report(clip.call, message, confidence="medium")
            return
        self.report(clip.call, message, fix=self._fix(clip, step))

    def _fix(self, clip: _steps.Event, step: _steps.Event | None) -> FixSpec | None:
        if step is None or step.function is not clip.function or step.arg is None:
            return None
        edit = _steps.insert_line(self.ctx, clip, f"{step.receiver}.unscale_({step.arg})", True)
        if edit is None:
            return None
        return self.fix("unsafe", f"Insert `{step.receiver}.unscale_({step.arg})` first", edit)
