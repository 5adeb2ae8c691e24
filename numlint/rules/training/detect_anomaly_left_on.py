"""NUM507 detect-anomaly-left-on."""

from __future__ import annotations

import re
from pathlib import PurePath

import libcst as cst

from numlint.analysis.semantics import keyword, positional
from numlint.rule import Invalid, Probe, Rule, Valid

_SET = frozenset(
    {"torch.autograd.set_detect_anomaly", "torch.autograd.anomaly_mode.set_detect_anomaly"}
)
_DETECT = frozenset({"torch.autograd.detect_anomaly", "torch.autograd.anomaly_mode.detect_anomaly"})
#: A file, class or function named for switching on anomaly mode or debugging is the switch.
_SWITCH_NAME = re.compile(r"anomal|debug", re.I)
_TRAINERS = frozenset(
    {
        "pytorch_lightning.Trainer",
        "pytorch_lightning.trainer.Trainer",
        "pytorch_lightning.trainer.trainer.Trainer",
        "lightning.Trainer",
        "lightning.pytorch.Trainer",
        "lightning.pytorch.trainer.Trainer",
        "lightning.pytorch.trainer.trainer.Trainer",
    }
)


class DetectAnomalyLeftOn(Rule):
    """Autograd anomaly detection switched on unconditionally in training code.

    What it does:
    Flags `torch.autograd.set_detect_anomaly(True)`, `torch.autograd.detect_anomaly()` and
    Lightning's `Trainer(detect_anomaly=True)` when they run unconditionally: not under an
    `if`, and not in a test file (`test_*.py`, `*_test.py`, `conftest.py`).

    Why is this bad?
    Anomaly mode records a stack trace for every autograd node and checks every backward
    output with a host synchronisation: each step gets several times slower (far more on a
    GPU). It only reports NaN, never Inf, and only in backward, so it is a debugging aid,
    not a safety net. Switch it on behind a debug flag, or use numlint's runtime monitor
    (`numlint.watch`), which catches the first NaN or Inf at its layer and step cheaply.

    Known limitations:
    A literal `True` is required (`set_detect_anomaly(args.debug)` is a deliberate switch);
    any enclosing `if` counts as a debug switch, and `detect_anomaly(check_nan=False)` (used
    for its forward tracebacks) is left alone, as are tests (`tests/`, `unittests/`,
    `test_*` files and functions), which switch it on to check gradients on purpose, and
    code whose file, class or function is named for it (`detect_anomaly.py`,
    `enable_anomaly_detection()`, `DebugPlugin`): running that code is the opt-in; and a
    function or main block that runs `gradcheck`, a gradient self-test.

    References:
    - https://pytorch.org/docs/stable/autograd.html#anomaly-detection
    - [numlint hazard catalog, row 31](https://github.com/numlint/numlint/blob/main/docs/hazards.md#31)
    """

    CODE = "NUM507"
    NAME = "detect-anomaly-left-on"
    MESSAGE = (
        "autograd anomaly detection left on slows every step and only catches NaN, never Inf; "
        "enable it behind a debug flag, or use numlint's runtime monitor (`numlint.watch`)"
    )
    CHUNK = "module"
    TRIGGERS = ("anomaly",)
    NEEDS_TORCH = False  # Lightning code need not mention torch

    VALID = [
        Valid(
            """
            import torch
            torch.autograd.set_detect_anomaly(args.debug)
            """,
            "a switch, not a literal True",
        ),
        Valid(
            """
            import torch
            if args.debug:
                torch.autograd.set_detect_anomaly(True)
            """,
            "behind a debug flag",
        ),
        Valid(
            """
            import torch
            torch.autograd.set_detect_anomaly(False)
            """,
            "switched off",
        ),
        Valid(
            """
            import torch
            with torch.autograd.detect_anomaly(check_nan=False):
                out = traced(*args)
            """,
            "kept for its forward tracebacks, not to catch NaN",
        ),
        Valid(
            """
            import lightning as L
            trainer = L.Trainer(max_epochs=3, detect_anomaly=False)
            """,
            "Lightning with anomaly detection off",
        ),
        Valid(
            """
            import torch
            class AnomalyDetectionCallback:
                def on_train_start(self, trainer, model):
                    torch.autograd.set_detect_anomaly(True)
            """,
            "an opt-in callback named for it: adding it is the switch",
        ),
        Valid(
            """
            import torch
            def enable_debug_mode():
                torch.autograd.set_detect_anomaly(True)
            """,
            "a helper named for debugging",
        ),
        Valid(
            """
            import torch
            if __name__ == "__main__":
                torch.autograd.gradcheck(sph_jn, (n, z), eps=0.01)
                torch.autograd.set_detect_anomaly(True)
                check_gradients(sph_jn)
            """,
            "a gradient self-test",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            torch.autograd.set_detect_anomaly(True)
            for x in loader:
                model(x).backward()
            """,
            line=2,
            column=1,
        ),
        Invalid(
            """
            from torch import autograd
            def train_step(model, x):
                with autograd.detect_anomaly():
                    loss = model(x)
                    loss.backward()
            """,
            line=3,
            column=10,
        ),
        Invalid(
            """
            import pytorch_lightning as pl
            trainer = pl.Trainer(max_epochs=10, detect_anomaly=True)
            """,
            line=2,
            column=11,
        ),
        Invalid(
            """
            import torch
            class TrainingCallback:
                def on_train_start(self, trainer, model):
                    torch.autograd.set_detect_anomaly(True)
            """,
            line=4,
            column=9,
            note="a callback that runs in every training",
        ),
        Invalid(
            """
            from torch.autograd import set_detect_anomaly
            if __name__ == "__main__":
                set_detect_anomaly(mode=True, check_nan=True)
                main()
            """,
            line=3,
            column=5,
            note="the main guard is not a debug switch",
        ),
    ]
    PROBE = Probe(
        scenario="detect-anomaly",
        note=(
            "a small MLP step is several times slower under anomaly mode, and an Inf produced "
            "in backward passes unreported while a NaN raises"
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        qual = self.ctx.qualname(node.func)
        if qual in _SET:
            on = positional(node, 0, "mode")
        elif qual in _DETECT:
            on = cst.Name("True")
            check_nan = keyword(node, "check_nan")
            if isinstance(check_nan, cst.Name) and check_nan.value == "False":
                return  # used for its forward tracebacks, not to catch NaN
        elif qual in _TRAINERS:
            on = keyword(node, "detect_anomaly")
        else:
            return
        if not (isinstance(on, cst.Name) and on.value == "True"):
            return
        if self._in_tests() or self._conditional() or self._named_switch():
            return
        if self._checks_gradients():
            return
        self.report(node)

    def _checks_gradients(self) -> bool:
        """The enclosing function or `if __name__ == "__main__":` block runs
        `torch.autograd.gradcheck`: a gradient self-test, which wants anomaly mode on."""
        for node in self.ctx.ancestors():
            if isinstance(node, (cst.FunctionDef, cst.If)):
                return "gradcheck(" in self.ctx.code(node)
        return False

    def _named_switch(self) -> bool:
        """In a file, class or function named for anomaly mode or debugging: an opt-in
        plugin or helper (`plugins/detect_anomaly.py`, `def enable_anomaly_detection()`)."""
        ctx = self.ctx
        if _SWITCH_NAME.search(PurePath(ctx.path).stem):
            return True
        return any(
            isinstance(n, (cst.FunctionDef, cst.ClassDef)) and _SWITCH_NAME.search(n.name.value)
            for n in ctx.ancestors()
        )

    def _conditional(self) -> bool:
        """Under an `if` of its function (other than `if __name__ == "__main__":`)."""
        for node in self.ctx.ancestors():
            if isinstance(node, (cst.FunctionDef, cst.Lambda)):
                return False
            if isinstance(node, cst.IfExp) or (
                isinstance(node, cst.If) and "__name__" not in self.ctx.code(node.test)
            ):
                return True
        return False
