"""NUM504 unscale-after-step."""

from __future__ import annotations

from collections.abc import Iterator

from numlint.rule import Invalid, Probe, Valid
from numlint.rules.training import _steps


class UnscaleAfterStep(_steps.StepRule):
    """`scaler.unscale_(optimizer)` after `scaler.step(optimizer)`: unscale between backward and step.

    What it does:
    Flags `scaler.unscale_(optimizer)` when, since the iteration's last backward,
    `scaler.step(optimizer)` has already run for the same scaler and optimizer, following
    statement order through `with` blocks, branches and helper methods of the same class.

    Why is this bad?
    Before `scaler.update()` the call raises "unscale_() is being called after step()";
    after `update()` it divides gradients that the step already used by the loss scale,
    and any clipping that follows comes too late. `unscale_` belongs right after
    `scaler.scale(loss).backward()` and before the clip and the step.

    Known limitations:
    Only the order inside one function (plus helpers it calls by name) is seen; the scaler
    and the optimizer are matched by their spelling.

    References:
    - https://pytorch.org/docs/stable/amp.html#torch.amp.GradScaler.unscale_
    - https://pytorch.org/docs/stable/notes/amp_examples.html#gradient-clipping
    """

    CODE = "NUM504"
    NAME = "unscale-after-step"
    MESSAGE = (
        "`scaler.unscale_(optimizer)` after `scaler.step(optimizer)` raises or unscales "
        "gradients already used; call it after `backward()` and before clipping and `step()`"
    )
    TRIGGERS = ("unscale_",)
    NEEDS_TORCH = False  # the scaler or optimizer may come from elsewhere

    VALID = [
        Valid(
            """
            for x in loader:
                scaler.scale(model(x)).backward()
                scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                scaler.step(optimizer)
                scaler.update()
            """,
            "the documented order",
        ),
        Valid(
            """
            scaler.scale(loss0 + loss1).backward()
            scaler.step(optimizer0)
            scaler.unscale_(optimizer1)
            torch.nn.utils.clip_grad_norm_(model1.parameters(), 1.0)
            scaler.step(optimizer1)
            scaler.update()
            """,
            "another optimizer's step came first",
        ),
        Valid(
            """
            for x in loader:
                scaler.unscale_(optimizer)
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad()
                scaler.scale(model(x)).backward()
            """,
            "a loop that steps at its top",
        ),
        Valid(
            """
            if fast:
                scaler.scale(loss).backward()
                scaler.step(optimizer)
            else:
                scaler.scale(loss).backward()
                scaler.unscale_(optimizer)
                scaler.step(optimizer)
            scaler.update()
            """,
            "the step of the other branch",
        ),
    ]
    INVALID = [
        Invalid(
            """
            for x in loader:
                scaler.scale(model(x)).backward()
                scaler.step(optimizer)
                scaler.unscale_(optimizer)
                scaler.update()
            """,
            line=4,
            column=5,
        ),
        Invalid(
            """
            class Trainer:
                def step(self, loss):
                    self.scaler.scale(loss).backward()
                    self.scaler.step(self.opt)
                    self.scaler.update()
                    with torch.no_grad():
                        self.scaler.unscale_(self.opt)
                        torch.nn.utils.clip_grad_norm_(self.params, 1.0)
            """,
            line=7,
            column=13,
            note="after update(): runs, but unscales gradients the step already used",
        ),
    ]
    PROBE = Probe(
        scenario="unscale-after-step",
        note=(
            "scale(loss).backward(); scaler.step(opt); scaler.unscale_(opt) raises RuntimeError "
            "'unscale_() is being called after step()'"
        ),
    )

    def check(self, t: _steps.StepTracker, seq: list[_steps.Event]) -> Iterator[tuple]:
        return _steps.unscales_after_step(seq)
