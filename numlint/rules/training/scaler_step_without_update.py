"""NUM503 scaler-step-without-update."""

from __future__ import annotations

from collections.abc import Iterator

from numlint.rule import FixSpec, Invalid, Probe, Valid
from numlint.rules.training import _steps


class ScalerStepWithoutUpdate(_steps.StepRule):
    """`scaler.step(optimizer)` without `scaler.update()` in the same iteration.

    What it does:
    Flags `scaler.step(optimizer)` of a `GradScaler` when no `scaler.update()` follows in
    the training iteration: none anywhere in the file for that scaler, or only one outside
    the loop that runs the backward passes (once per epoch instead of once per step). A loop
    over several optimizers that steps each and updates once afterwards is correct.

    It also flags `scaler.unscale_(optimizer)` (or the step) when a path after it leaves the
    iteration without the `scaler.update()` that another path of the same function runs: a
    `continue` or `return` that skips a non-finite step, or an `if` whose one branch steps
    and updates while the other only zeroes the gradients.

    Why is this bad?
    `update()` resets the scaler's per-optimizer state and adapts the loss scale. Without
    it the second `scaler.step(optimizer)` raises "step() has already been called since the
    last update()" (only once the scaler is enabled, typically on the GPU run), and the loss
    scale never backs off after an overflow, so every later step is skipped. After a skipped
    update, the next `unscale_` raises "unscale_() has already been called on this optimizer
    since the last update()": the overflow that made the code skip is the one event the
    scaler needed to see.

    Fix safety:
    When no `update()` is called for the scaler at all, the fix inserts `scaler.update()`
    on its own line after the step. It is unsafe: the training run changes (it becomes the
    intended one).

    Known limitations:
    A step whose scaler comes in as a parameter is flagged only when the same function runs
    the backward in a loop; an `update()` anywhere else in the file for the same spelling
    (`self.scaler`) silences the rule, since it may run from another method.

    References:
    - https://pytorch.org/docs/stable/amp.html#torch.amp.GradScaler.update
    - https://pytorch.org/docs/stable/notes/amp_examples.html
    """

    CODE = "NUM503"
    NAME = "scaler-step-without-update"
    MESSAGE = (
        "`scaler.step(optimizer)` without `scaler.update()` in the iteration: the next step "
        "raises and the loss scale never adapts; call `scaler.update()` after every step"
    )
    TRIGGERS = ("GradScaler", ".scale(", "unscale_")
    NEEDS_TORCH = False  # the scaler or optimizer may come from elsewhere

    VALID = [
        Valid(
            """
            import torch
            for x, y in loader:
                scaler.scale(model(x, y)).backward()
                scaler.unscale_(optimizer)
                norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                if torch.isfinite(norm):
                    scaler.step(optimizer)
                scaler.update()
            """,
            "a skipped step, with update() on every path",
        ),
        Valid(
            """
            import torch
            scaler = torch.amp.GradScaler("cuda")
            for x in loader:
                scaler.scale(model(x)).backward()
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad()
            """,
            "update after every step",
        ),
        Valid(
            """
            import torch
            scaler = torch.amp.GradScaler("cuda")
            for x in loader:
                scaler.scale(model(x)).backward()
                for opt in optimizers:
                    scaler.step(opt)
                scaler.update()
            """,
            "several optimizers, one update per iteration",
        ),
        Valid(
            """
            class Trainer:
                def __init__(self):
                    self.scaler = torch.amp.GradScaler()
                def optimizer_step(self):
                    self.scaler.step(self.optimizer)
                def after_step(self):
                    self.scaler.update()
            """,
            "the update happens in another method",
        ),
        Valid(
            """
            def mixed_precision_one_batch(self):
                self.scaler.scale(self.loss).backward()
                self.scaler.step(self.opt)

            class MixedPrecision(Callback):
                def before_fit(self):
                    self.learn.scaler = torch.amp.GradScaler()
                def after_step(self):
                    self.learn.scaler.update()
            """,
            "a callback updates the same scaler attribute reached through another object",
        ),
        Valid(
            """
            import torch
            for x in loader:
                optimizer.step()
                scheduler.step()
                model_ema.update()
            """,
            "an optimizer step with no GradScaler",
        ),
        Valid(
            """
            def step(scaler, optimizer):
                scaler.step(optimizer)
            """,
            "a helper given the scaler: the caller may update it",
        ),
        Valid(
            """
            import torch
            scaler = torch.amp.GradScaler("cuda")
            for x in loader:
                loss = model(x)
                for opt in optimizers:
                    opt.zero_grad()
                    scaler.scale(loss).backward(retain_graph=True)
                    scaler.step(opt)
                scaler.update()
            """,
            "one step per optimizer, then one update per iteration (the documented pattern)",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            for x, y in loader:
                scaler.scale(model(x, y)).backward()
                scaler.unscale_(optimizer)
                norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                if not torch.isfinite(norm):
                    optimizer.zero_grad()
                    continue
                scaler.step(optimizer)
                scaler.update()
            """,
            line=4,
            column=5,
            note="skipping a non-finite step after unscale_ without update()",
        ),
        Invalid(
            """
            import torch
            scaler = torch.amp.GradScaler("cuda")
            for x in loader:
                optimizer.zero_grad()
                scaler.scale(model(x)).backward()
                scaler.step(optimizer)
            """,
            line=6,
            column=5,
            fixed="""
            import torch
            scaler = torch.amp.GradScaler("cuda")
            for x in loader:
                optimizer.zero_grad()
                scaler.scale(model(x)).backward()
                scaler.step(optimizer)
                scaler.update()
            """,
        ),
        Invalid(
            """
            from torch.cuda.amp import GradScaler
            def train(model, loader, optimizer):
                scaler = GradScaler()
                for epoch in range(10):
                    for x in loader:
                        scaler.scale(model(x)).backward()
                        scaler.step(optimizer)
                        optimizer.zero_grad()
                    scaler.update()
            """,
            line=7,
            column=13,
            note="update once per epoch: no fix",
        ),
        Invalid(
            """
            class Trainer:
                def train_step(self, batch):
                    loss = self.model(batch)
                    self.grad_scaler.scale(loss).backward()
                    self.grad_scaler.unscale_(self.optimizer)
                    self.grad_scaler.step(self.optimizer)
            """,
            line=6,
            column=9,
            fixed="""
            class Trainer:
                def train_step(self, batch):
                    loss = self.model(batch)
                    self.grad_scaler.scale(loss).backward()
                    self.grad_scaler.unscale_(self.optimizer)
                    self.grad_scaler.step(self.optimizer)
                    self.grad_scaler.update()
            """,
            note="a scaler on self, recognised from its scale/unscale_ calls",
        ),
        Invalid(
            """
            class Trainer:
                def train_step(self, batch):
                    self.scaler.scale(self.model(batch)).backward()
                    self.scaler.step(self.optimizer)
                def after_step(self):
                    self.ema.update()
            """,
            line=4,
            column=9,
            fixed="""
            class Trainer:
                def train_step(self, batch):
                    self.scaler.scale(self.model(batch)).backward()
                    self.scaler.step(self.optimizer)
                    self.scaler.update()
                def after_step(self):
                    self.ema.update()
            """,
            note="another object's update() is not the scaler's",
        ),
    ]
    PROBE = Probe(
        scenario="scaler-step-without-update",
        note=(
            "two iterations of scale(loss).backward(); scaler.step(opt) with no update(): the "
            "second step raises RuntimeError 'step() has already been called since the last "
            "update()'; with update() both steps run"
        ),
    )

    def check(self, t: _steps.StepTracker, seq: list[_steps.Event]) -> Iterator[tuple]:
        yield from _steps.steps_without_update(t, seq)
        yield from _steps.updates_skipped(seq)

    def found(self, step: _steps.Event, why: str) -> None:
        if why == "skipped":
            call = "unscale_(optimizer)" if step.kind == _steps.UNSCALE else "step(optimizer)"
            message = (
                f"`scaler.{call}` on a path that skips `scaler.update()` (a `continue`, "
                "`return` or branch after it): the next `unscale_` / `step` raises and the "
                "loss scale never backs off after the overflow that made the skip; call "
                "`scaler.update()` on that path too"
            )
            self.report(step.call, message)
            return
        if why == "outside":
            message = (
                "`scaler.update()` runs outside the loop that calls "
                "`scaler.step(optimizer)`: the second step raises and the loss scale "
                "never adapts; call `scaler.update()` after every step"
            )
            self.report(step.call, message)
        else:
            self.report(step.call, fix=self._fix(step))

    def _fix(self, step: _steps.Event) -> FixSpec | None:
        line = f"{step.receiver}.update()"
        edit = _steps.insert_line(self.ctx, step, line, before=False)
        if edit is None:
            return None
        return self.fix("unsafe", f"Insert `{line}` after the step", edit)
