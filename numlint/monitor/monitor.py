"""The training-loop monitor: `watch(model, optimizer)` and the Monitor it returns.

Fast path, every step (see `hooks`). Each submodule's forward hook reduces each floating output
to one 0-dim device tensor (its sum: non-finite iff the output holds a NaN/Inf) and appends it
to a list without reading it. The top-level module's forward hook reads the whole list once: one
read per forward, so the error surfaces at the `model(x)` call of the failing step, before loss
and backward run. Backward is the same with hooks on the autograd nodes of module outputs (the
gradient flowing back into each module); a gradient needs no flag when a weight gradient covers
it (Linear, Conv, norms: their weight gradient is a full reduction of it) or when the module
passes a NaN/Inf on to its input's gradient, which is checked (Dropout, pooling, reshapes,
Tanh...). Before optimizer.step one multi-tensor norm (`torch._foreach_norm`) gives every
gradient norm, read at once with that step's backward flags: the global norm is logged, and a
non-finite gradient stops the step before it reaches the weights. (Backward flags not followed
by a step are read at the next forward, on leaving the `with` block, or, while no optimizer is
known, when the backward pass ends.) A parameter that the step itself makes non-finite shows in
the next forward's read and is reported with phase "param" (check_params="step" checks right
after every step instead, for one more norm per step). On the CPU a read is a plain load of each
flag; on an accelerator the flags are stacked and read with one synchronisation. The step
events (norm, explosion, vanishing) are built and written a second's worth at a time. Hooks
never modify a tensor, and nothing large is held past the step that made it.

Failure path, only when a read says non-finite (see `locate`): the forward (and backward) of
that step is re-run on the same batch with the same RNG state under exact per-module checks,
the events are written, a snapshot is saved and the action ("raise", "warn", "record") applied.
"""

from __future__ import annotations

import atexit
import fnmatch
import math
import time
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal

import torch
from torch import Tensor, nn

from numlint.monitor import capture
from numlint.monitor import distributed as dist
from numlint.monitor import events as ev
from numlint.monitor import snapshot as snap_mod
from numlint.monitor.amp import ScalerPatch, SkipTracker
from numlint.monitor.events import Event, EventLog, NonFiniteError, make_event
from numlint.monitor.findings import Finding, from_flags, param_findings, to_event
from numlint.monitor.grads import (
    ExplosionDetector,
    ParamGroup,
    norms,
    param_stats,
    stack_on,
    step_events,
)
from numlint.monitor.hooks import FlagRecorder
from numlint.monitor.locate import ForwardState, locate_backward, locate_forward
from numlint.monitor.stats import (
    all_finite,
    first_nonfinite,
    flag,
    flat_tensors,
    is_checked,
    read_floats,
    tensor_stats,
)

Action = Literal["raise", "warn", "record"]
ACTIONS = ("raise", "warn", "record")
DEFAULT_LOG = "numlint-events.jsonl"
LOSS = "<loss>"


class NumlintWarning(RuntimeWarning):
    """Issued for error events when action="warn"."""


def _nonfinite_data_in_graph(loss: Tensor, limit: int = 64) -> tuple[str, Tensor] | None:
    """A non-finite tensor saved by the loss's autograd graph that is data (a leaf needing no
    gradient: a target), as ("MseLossBackward0.target", tensor); None if there is none."""
    queue, seen = [loss.grad_fn], set()
    while queue and len(seen) < limit:
        node = queue.pop(0)
        if node is None or node in seen:
            continue
        seen.add(node)
        for attr in dir(node):
            if not attr.startswith("_saved_"):
                continue
            try:
                t = getattr(node, attr)
            except Exception:
                continue
            if (
                isinstance(t, Tensor)
                and t.dim() > 0  # (a 0-dim one is a constant of the code, `* inf`)
                and t.grad_fn is None
                and not t.requires_grad
                and is_checked(t)
                and not bool(torch.isfinite(t).all())
            ):
                return f"{node.name()}.{attr[len('_saved_') :]}", t
        queue.extend(n for n, _ in node.next_functions)
    return None


class Monitor:
    """Watches one model (and optionally its optimizer and GradScaler) while active.

    Use as a context manager (`with monitor:`) or with `start()` / `stop()`. Events are kept in
    a ring buffer (`events`) and appended to the JSONL `log`."""

    def __init__(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer | None = None,
        *,
        scaler: Any = None,
        log: str | Path | None = DEFAULT_LOG,
        action: Action = "raise",
        criterion: nn.Module | None = None,
        snapshot: str | Path | Literal["auto"] | None = "auto",
        grad_stats: bool | int = False,
        explosion_factor: float = 10.0,
        explosion_window: int = 100,
        explosion_warmup: int = 10,
        max_skips: int = 10,
        min_scale: float = 1.0,
        check_backward: bool = True,
        check_params: Literal["forward", "step"] | bool = "forward",
        static: bool = True,
        ignore: Iterable[str] = (),
        max_events: int = 10_000,
        max_findings: int = 20,
        max_snapshots: int = 5,
        max_log_bytes: int | None = 64 * 2**20,
    ) -> None:
        if action not in ACTIONS:
            raise ValueError(f"action must be one of {ACTIONS}, not {action!r}")
        if not isinstance(model, nn.Module):
            raise TypeError(f"watch() needs an nn.Module, got {type(model).__name__}")
        self.model = model
        self.optimizer = optimizer
        self.scaler = scaler
        self.action: Action = action
        self.criterion = criterion
        self.grad_stats_every = int(grad_stats)  # True: every step; N: every N steps
        self._skips = SkipTracker(max_skips, min_scale)
        self.check_backward = check_backward
        self.check_params = "forward" if check_params is True else check_params
        self.static = static
        self.ignore = tuple(ignore)
        self.max_findings = max_findings
        self.rank = dist.rank()
        self._world = dist.world_size()
        self.log_path = self._log_path(log)
        self.snapshot_path = self._snapshot_path(snapshot, self.log_path)
        self._explosion = ExplosionDetector(explosion_factor, explosion_window, explosion_warmup)
        self._log = EventLog(self.log_path, max_events, max_log_bytes)
        self.max_snapshots = max_snapshots
        self._handles: list[Any] = []
        self._scaler_patch: ScalerPatch | None = None
        self._active = False
        # per-step state
        self.step = 0  # optimizer steps completed
        self.iteration = 0  # optimizer steps attempted (GradScaler skips included)
        self.failed = False
        self.snapshot: Any = None
        self.last_grad_norm: float | None = None
        self._rec = FlagRecorder(self._end_backward, check_backward)
        self._args: tuple[Any, ...] | None = None
        self._kwargs: dict[str, Any] | None = None
        self._rng: ForwardState | None = None
        self._grad_enabled = True
        self._loss: Tensor | None = None  # the step's loss (logged, checked before the step)
        self._loss_unread: Tensor | None = None  # a loss backward() saw, not yet checked
        self._loss_finite = True
        self._targets: tuple[Any, ...] | None = None
        self._stepped = False
        self._opt_seen: dict[int, bool] = {}
        self._pending: tuple[Any, ...] | None = None
        self._unbuilt: list[tuple[Any, ...]] = []  # steps whose events are not built yet
        self._unbuilt_since = 0.0
        self._clip: tuple[Tensor, float] | None = None  # clip_grad_norm_'s result this step
        self._micro = 0  # forwards since the last optimizer step (gradient accumulation)
        self._comm_flags: list[Tensor] = []  # local DDP buckets, before their all-reduce
        # incidents: one open per step (later failures of that step are its consequences),
        # and a run of identical incidents collapsed into one event with a count
        self.incidents = 0
        self._incident_open = False
        self._last_sig: tuple[Any, ...] | None = None
        self._repeat: Event | None = None

    # ------------------------------------------------------------------ set-up
    def _log_path(self, log: str | Path | None) -> Path | None:
        if log is None:
            return None
        path = Path(str(log).format(rank=self.rank))
        if self.rank and "{rank}" not in str(log):
            path = path.with_name(f"{path.stem}.rank{self.rank}{path.suffix}")
        return path

    def _snapshot_path(self, snapshot: Any, log: Path | None) -> Path | None:
        if snapshot == "auto":
            return log.with_name(log.stem + ".snapshot.pt") if log is not None else None
        if snapshot is None:
            return None
        path = Path(str(snapshot).format(rank=self.rank))
        if self.rank and "{rank}" not in str(snapshot):
            path = path.with_name(f"{path.stem}.rank{self.rank}{path.suffix}")
        return path

    @property
    def events(self) -> list[Event]:
        """The events recorded so far (the last `max_events` of them; kept after stop())."""
        self._build_steps()
        return list(self._log.events)

    def __enter__(self) -> Monitor:
        self.start()
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        try:
            if exc_type is None:
                self._check_pending()
        finally:
            self.stop()

    def start(self) -> Monitor:
        """Install the hooks. Idempotent only in pairs with stop()."""
        if self._active:
            raise RuntimeError("this monitor is already active")
        self._log.open()
        atexit.register(self._write_at_exit)  # a monitor never stopped still logs its last steps
        self.rank = dist.rank()
        self._world = dist.world_size()
        named = list(self.model.named_modules())
        self._names = [n for n, _ in named]
        self._name_of: dict[nn.Module, str] = {m: n for n, m in named}
        named_params = [(n, p) for n, p in self.model.named_parameters() if p.requires_grad]
        self._param_names = [n for n, _ in named_params]
        self._params = [p for _, p in named_params]
        self._param_ids = {id(p) for p in self._params}
        self._all_present = list(range(len(self._params)))
        self._groups = self._groups_from(self.optimizer)
        self._rec.end_callback = self.optimizer is None
        try:
            for i, (name, module) in enumerate(named):
                if module is self.model or self._ignored(name):
                    continue
                hook = self._rec.forward_hook(i, module)
                self._handles.append(module.register_forward_hook(hook))
            root = self.model
            self._handles.append(root.register_forward_pre_hook(self._root_pre, with_kwargs=True))
            self._handles.append(root.register_forward_hook(self._root_post, with_kwargs=True))
            self._install_optimizer_hooks()
            if self.scaler is not None:
                self._scaler_patch = ScalerPatch(self.scaler, self._on_scale, self._on_update)
            if self.criterion is not None:
                self._handles.append(
                    self.criterion.register_forward_hook(self._on_criterion, with_kwargs=True)
                )
            capture.add(self._on_backward_call, self._on_clip)
            self._install_comm_hook()
        except BaseException:
            self.stop()
            raise
        self._active = True
        self._paused = False
        return self

    def stop(self) -> None:
        """Remove every hook and restore the scaler; safe to call twice and after errors."""
        self._paused = True
        for h in self._handles:
            h.remove()
        self._handles.clear()
        if self._scaler_patch is not None:
            self._scaler_patch.remove()
            self._scaler_patch = None
        capture.remove(self._on_backward_call, self._on_clip)
        box = getattr(self.model, "_numlint_comm_hook", None)
        if box is not None and box[0] is self:
            box[0] = None
        atexit.unregister(self._write_at_exit)
        self._build_steps()
        self._end_repeat()
        self._log.close()
        self._active = False
        self._rec.take_forward()
        self._rec.take_backward()

    def _agree(self, local_bad: bool, spread_bad: bool = False) -> int | None:
        """None when no rank saw a non-finite value, else the rank where it began (see
        `dist.agree`; one all-reduce when distributed, nothing to ask otherwise)."""
        if self._world == 1:
            return self.rank if local_bad or spread_bad else None
        return dist.agree(local_bad, spread_bad)

    def _install_comm_hook(self) -> None:
        """Under DDP, flag each gradient bucket before its all-reduce (one reduction per bucket,
        read with the step's other flags), so a rank's own non-finite gradient is told from one
        the all-reduce brought. Skipped when the model has a communication hook already."""
        from torch.nn.parallel import DistributedDataParallel

        model = self.model
        if not isinstance(model, DistributedDataParallel) or self._world == 1:
            return
        box = getattr(model, "_numlint_comm_hook", None)
        if box is not None:
            box[0] = self
            return
        if getattr(model, "_comm_hooks", None):
            return
        box = [self]
        group = getattr(model, "process_group", None)
        scale = 1.0 / (group.size() if group is not None else self._world)

        def hook(state, bucket):  # (DDP checks the annotations: none, or its own types)
            buf = bucket.buffer()
            mon = box[0]
            if mon is not None and not mon._paused:
                mon._comm_flags.append(flag(buf))
            # DDP's own reduction, operation for operation (results stay bit-identical): a
            # multiplication by 1 / world size, then an all-reduce sum.
            buf.mul_(scale)
            work = torch.distributed.all_reduce(buf, group=group, async_op=True)
            return work.get_future().then(lambda fut: fut.value()[0])

        model.register_comm_hook(None, hook)
        model._numlint_comm_hook = box  # type: ignore[assignment]

    def _ignored(self, name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in self.ignore)

    @property
    def _paused(self) -> bool:
        return self._rec.paused

    @_paused.setter
    def _paused(self, value: bool) -> None:
        self._rec.paused = value

    @property
    def active(self) -> bool:
        """True between start() and stop()."""
        return self._active

    def _groups_from(self, optimizer: torch.optim.Optimizer | None) -> list[ParamGroup]:
        index = {id(p): i for i, p in enumerate(self._params)}
        if optimizer is not None:
            groups = []
            for g, group in enumerate(optimizer.param_groups):
                ids = [index[id(p)] for p in group["params"] if id(p) in index]
                groups.append(ParamGroup(str(group.get("name", f"group{g}")), ids))
            return groups
        by_child: dict[str, list[int]] = {}
        for i, name in enumerate(self._param_names):
            by_child.setdefault(name.split(".", 1)[0], []).append(i)
        return [ParamGroup(k, v) for k, v in by_child.items()]

    def _install_optimizer_hooks(self) -> None:
        if self.optimizer is not None:
            self._handles.append(self.optimizer.register_step_pre_hook(self._pre_step))
            self._handles.append(self.optimizer.register_step_post_hook(self._post_step))
            return
        from torch.optim.optimizer import (
            register_optimizer_step_post_hook,
            register_optimizer_step_pre_hook,
        )

        self._handles.append(register_optimizer_step_pre_hook(self._global_pre_step))
        self._handles.append(register_optimizer_step_post_hook(self._global_post_step))

    def _owns(self, opt: torch.optim.Optimizer) -> bool:
        known = self._opt_seen.get(id(opt))
        if known is None:
            mine = {id(p) for p in self._params}
            known = any(id(p) in mine for g in opt.param_groups for p in g["params"])
            self._opt_seen[id(opt)] = known
            if known and self.optimizer is None:
                self.optimizer = opt
                self._groups = self._groups_from(opt)
                self._rec.end_callback = False
        return known

    def _global_pre_step(self, opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        if self._owns(opt):
            self._pre_step(opt, args, kwargs)

    def _global_post_step(self, opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        if self._owns(opt):
            self._post_step(opt, args, kwargs)

    # ------------------------------------------------------------------ forward
    def _root_pre(self, module: nn.Module, args: Any, kwargs: Any) -> None:
        rec = self._rec
        if rec.paused:
            return
        out_grads = rec.out_grads
        backward_seen = out_grads is not None and any(g is not None for g in out_grads)
        pending = backward_seen and self.optimizer is not None
        if (rec.bflags or pending) and not self._scaler_on():
            # A backward pass with no optimizer step since (gradient accumulation): check it,
            # its loss and the gradients so far now, while its micro-batch is still here to
            # re-run.
            self._check_backward(grads=pending)
        elif not backward_seen:
            self._incident_open = False  # the last step is over (taken or dropped)
        self._rng = ForwardState.capture()
        self._grad_enabled = torch.is_grad_enabled()
        rec.out_grads = None
        rec._queued = False  # in case a backward pass died before its end callback

    def _root_post(self, module: nn.Module, args: Any, kwargs: Any, output: Any) -> None:
        rec = self._rec
        if rec.paused:
            return
        rec.root_outputs(output)
        self._args, self._kwargs = args, kwargs
        self._micro += 1
        if rec.fflags:
            self._drain_forward()

    def _drain_forward(self) -> None:
        """Read the forward flags collected so far (one host read). Runs at the end of the
        top-level forward, and before backward ends or a step for flags left by submodules
        called on their own (or recomputed by activation checkpointing)."""
        if not self._rec.fflags:
            return
        saved, saved_idx = self._rec.take_forward()
        ok = all_finite(saved)
        if ok and self._world == 1:
            return
        bad_rank = self._agree(not ok)
        if bad_rank is not None:
            self._forward_failure(saved, saved_idx, bad_rank)

    def _forward_failure(self, flags: list[Tensor], idx: list[int], bad_rank: int) -> None:
        if bad_rank != self.rank:
            self._fail_remote("forward", bad_rank)
            return
        if self.check_params and not self._params_finite():
            # Parameters went non-finite (the last optimizer step, or they started that way).
            self._fail("param", self._param_findings("param"))
            return
        findings: list[Finding] = []
        if self._args is not None:
            findings = self._paused_call(
                locate_forward,
                self.model,
                self._name_of,
                self._args,
                self._kwargs or {},
                self._rng,
                self._grad_enabled,
                self.max_findings,
            )
        findings = [f for f in findings if not self._ignored(f.module)]
        if not findings:
            findings = self._from_flags(flags, idx, "output")
        if not findings:
            return  # only modules the user asked to ignore held non-finite values
        phase = "forward"
        first = next((f for f in findings if f.origin), findings[0])
        if first.module == "" and first.tensor.endswith(".loss"):
            phase = "loss"  # a model that computes its own loss (Hugging Face style)
        if first.origin and isinstance(first.obj, nn.Module) and not self._incident_open:
            self._add_op(first)
        self._fail(phase, findings)

    def _add_op(self, f: Finding) -> None:
        """Name the op inside the origin module that made the NaN/Inf, its source line, and
        its dtype (the event's `dtype`; the module output's is `output_dtype`)."""
        from numlint.monitor.opcheck import locate_op

        was = self._paused
        self._paused = True
        try:
            info = locate_op(
                self.model,
                f.obj,
                self._args or (),
                self._kwargs or {},
                self._rng,
                self._grad_enabled,
            )
        except Exception:
            info = None
        finally:
            self._paused = was
        if info is None:
            return
        f.extra.update(op=info["op"], source=info["source"], code=info["code"])
        if f.stats.get("dtype") is not None:
            f.extra["output_dtype"] = f.stats["dtype"]
            f.stats["dtype"] = info["dtype"]

    # ------------------------------------------------------------------ backward
    def _end_backward(self) -> None:
        """Runs once when the autograd engine finishes a backward pass, while no optimizer is
        known (with one, the backward flags are read with the gradient norms before its step)."""
        rec = self._rec
        rec._queued = False
        if rec.paused:
            return
        if rec.fflags:
            self._drain_forward()
        if self._scaler_on():
            return  # GradScaler skips overflowing steps: the flags wait for update()
        self._check_backward(grads=self.optimizer is None)

    def _scaler_on(self) -> bool:
        return self._scaler_patch is not None and self._scaler_patch.enabled()

    def _check_backward(self, grads: bool = False) -> None:
        """Read the backward flags not yet read and the loss of that backward (and, with
        `grads`, the parameter gradients so far) in one read; report a non-finite one."""
        saved, saved_idx = self._rec.take_backward()
        loss = self._take_loss_flag()
        extra = [loss] if loss is not None else []
        if grads:
            extra += self._grad_norms()
        ok = all_finite(saved + extra)
        if not ok and grads and all_finite(saved + extra[:1]):
            ok = self._grads_finite_exact()  # a sum of squares can overflow
        if ok and self._world == 1:
            return  # the output gradients stay until the next forward, for the step's check
        bad_rank = self._agree(not ok)
        if bad_rank is None:
            return
        if bad_rank != self.rank:
            self._fail_remote("backward", bad_rank)
        elif loss is not None and not math.isfinite(loss.item()):
            self._loss_failure(self._loss)
        else:
            self._backward_failure(saved, saved_idx)

    def _take_loss_flag(self) -> Tensor | None:
        """The loss seen by backward() since the last check, as a 0-dim tensor (not read)."""
        loss, self._loss_unread = self._loss_unread, None
        return loss.reshape(()) if loss is not None else None

    def _check_pending(self) -> None:
        """On leaving the `with` block: read flags no check point has read yet (a last
        backward pass not followed by an optimizer step)."""
        rec = self._rec
        if not self._active or rec.paused:
            return
        if rec.fflags:
            self._drain_forward()
        if rec.bflags and not self._scaler_on():
            self._check_backward()

    def _grad_norms(self) -> list[Tensor]:
        return norms([p.grad for p in self._params if p.grad is not None])  # type: ignore[misc]

    def _params_finite(self) -> bool:
        """Every parameter finite: one multi-tensor norm, checked exactly when it overflows."""
        if all_finite(norms([p.detach() for p in self._params])):
            return True
        return all(bool(torch.isfinite(p).all()) for p in self._params)

    def _loss_gradient_failure(self) -> bool:
        """When the gradient arriving at the model output is already non-finite (the loss did
        it), report that and return True."""
        grads = self._rec.out_grads or []
        g = next((t for t in grads if t is not None and not bool(torch.isfinite(t).all())), None)
        if g is None:
            return False
        f = Finding(LOSS, "grad_output", tensor_stats(g), True, self.criterion)
        f.extra["gradient_of"] = "model output"
        self._fail("loss", [f])
        return True

    def _backward_failure(self, flags: list[Tensor], idx: list[int]) -> None:
        if self._loss_gradient_failure():
            return
        findings = self._locate_backward()
        if not findings and flags:
            findings = self._from_flags(flags, idx, "grad_output")
        if not findings:
            findings = self._param_findings("grad")
        self._fail("backward", findings or [Finding("?", "grad", {}, True)])

    def _locate_backward(self) -> list[Finding]:
        """Re-run the last forward and backward with exact checks (empty if it cannot)."""
        grads = self._rec.out_grads or []
        if self._args is None or not any(g is not None for g in grads):
            return []
        return self._paused_call(
            locate_backward,
            self.model,
            self._name_of,
            self._args,
            self._kwargs or {},
            self._rng,
            list(grads),
            self.max_findings,
        )

    # ------------------------------------------------------------------ loss
    def _check_loss(self, loss: Any, inputs: Any = None) -> None:
        tensors = flat_tensors(loss)
        if not tensors:
            return
        self._loss = tensors[0].detach()
        ok = all_finite([flag(t) for t in tensors])
        self._loss_finite = ok
        bad_rank = self._agree(not ok)
        if bad_rank is None:
            return
        if bad_rank != self.rank:
            self._fail_remote("loss", bad_rank)
            return
        t = next(t for t in tensors if not bool(torch.isfinite(t).all()))
        self._loss_failure(t, inputs)

    def _loss_failure(self, loss: Tensor | None, inputs: Any = None) -> None:
        """A non-finite loss: it began in the target data when a target (the criterion's, or a
        tensor the loss's autograd graph saved that is data, not computed) holds a NaN/Inf,
        else in the loss computation itself (phase "loss", module "<loss>")."""
        if loss is None:
            return
        data = None
        if self._targets is not None:
            data = first_nonfinite(self._targets, "target")
        if data is None:
            data = _nonfinite_data_in_graph(loss)
        outputs_ok = all(bool(torch.isfinite(x).all()) for x in flat_tensors(inputs))
        findings = []
        if data is not None:
            findings.append(Finding("<target>", data[0], tensor_stats(data[1]), True))
        f = Finding(LOSS, "loss", tensor_stats(loss), data is None and outputs_ok, self.criterion)
        f.extra["inputs_finite"] = data is None and outputs_ok
        findings.append(f)
        self._fail("loss", findings)

    def _on_backward_call(self, t: Tensor) -> None:
        """`t.backward()` was called: keep a scalar floating `t` as the step's loss (not read;
        under an enabled GradScaler its `scale()` call gives the unscaled loss instead)."""
        if self._paused or t.numel() != 1 or not is_checked(t) or self._scaler_on():
            return
        self._loss = self._loss_unread = t.detach()

    def _on_clip(self, total: Tensor, max_norm: float, params: list[Tensor]) -> None:
        """clip_grad_norm_ ran on this model's parameters: keep its pre-clip norm (not read)."""
        if not self._paused and params and id(params[0]) in self._param_ids:
            self._clip = (total, max_norm)

    def _on_criterion(self, module: nn.Module, args: Any, kwargs: Any, output: Any) -> None:
        if self._paused:
            return
        self._targets = tuple(args[1:]) + tuple(kwargs.values())
        self._check_loss(output, (args, kwargs))

    def _on_scale(self, outputs: Any) -> None:
        if not self._paused:
            self._check_loss(outputs)

    # ------------------------------------------------------------------ optimizer
    def _pre_step(self, opt: Any, args: Any, kwargs: Any) -> None:
        """Before optimizer.step: every gradient norm in one multi-tensor op, read at once
        with the backward flags, the loss, the pre-clip norm and (under DDP) the local gradient
        buckets of the step (one host read)."""
        rec = self._rec
        if rec.paused:
            return
        if rec.fflags:
            self._drain_forward()
        self._stepped = True
        flags, flag_idx = rec.take_backward() if rec.bflags else ([], [])
        if flags and self._scaler_on():
            flags = []  # GradScaler let this step through: its gradients are finite
        local, self._comm_flags = self._comm_flags, []
        clip, self._clip = self._clip, None
        self._loss_unread = None
        params = self._params
        grads = [p.grad for p in params]
        present = self._all_present
        for g in grads:
            if g is None:  # some parameters got no gradient this step
                present = [i for i, g in enumerate(grads) if g is not None]
                grads = [grads[i] for i in present]
                break
        loss = self._loss
        if loss is not None and loss.numel() != 1:
            loss = None
        head = flags + local
        if loss is not None:
            head.append(loss.reshape(()))
        if clip is not None:
            head.append(clip[0].reshape(()))
        values = head + norms(grads)  # type: ignore[arg-type]
        read = read_floats(values) if values else []  # the one host read before the step
        nf, nl = len(flags), len(local)
        backward_ok = all(math.isfinite(v) for v in read[:nf])
        local_ok = all(math.isfinite(v) for v in read[nf : nf + nl])
        loss_value = read[nf + nl] if loss is not None else None
        pre_clip = read[len(head) - 1] if clip is not None else None
        del read[: len(head)]
        total = math.sqrt(math.fsum([v * v for v in read]))
        loss_ok = loss_value is None or math.isfinite(loss_value)
        local_bad = not (backward_ok and local_ok and loss_ok)
        # (a sum of squares can overflow: a non-finite total is checked exactly)
        ok = not local_bad and (math.isfinite(total) or self._grads_finite_exact())
        try:
            if not ok or self._world > 1:
                bad_rank = self._agree(local_bad, not ok)
                if bad_rank is not None:
                    if bad_rank != self.rank:
                        self._fail_remote("grad", bad_rank)
                    elif not loss_ok:
                        self._loss_failure(loss)
                    elif not backward_ok:
                        self._backward_failure(flags, flag_idx)
                    else:
                        self._grad_failure()
        finally:
            # The gradient at the model output is needed no more: holding it on past the step
            # would keep a large block (an LM head's) from the allocator through the next step.
            rec.out_grads = None
        if not grads:
            self._pending = None
            return
        rows = None
        if self.grad_stats_every and self.iteration % self.grad_stats_every == 0:
            rows = param_stats(params, self._param_names, present)
        clipped = (total, clip[1]) if clip is not None and pre_clip is not None else None
        if clipped is not None:
            total = pre_clip  # type: ignore[assignment]
        self._pending = (total, present, read, loss_value, rows, clipped)

    def _grad_failure(self) -> None:
        """Non-finite parameter gradients before the step. When re-running the last backward
        reproduces them, the module where they began is named (phase "backward"); otherwise
        something between backward and the step made them (phase "grad")."""
        if self._loss_gradient_failure():  # (a Linear head's output gradient has no flag)
            return
        findings = [f for f in self._locate_backward() if f.origin or f.stats]
        if any(f.origin for f in findings):
            self._fail("backward", findings)
        else:
            self._fail("grad", self._param_findings("grad"))

    def _grads_finite_exact(self) -> bool:
        return all(bool(torch.isfinite(p.grad).all()) for p in self._params if p.grad is not None)

    def _post_step(self, opt: Any, args: Any, kwargs: Any) -> None:
        """After optimizer.step: count the step; with check_params="step", check parameters
        (one multi-tensor norm, one read). By default ("forward") a parameter the step made
        non-finite is found, at no per-step cost, by the next forward's check, and reported
        with phase "param" at the same step."""
        if self._rec.paused:
            return
        self.step += 1
        self._micro = 0
        self._incident_open = False
        if self.check_params == "step" and self._params:
            ok = all_finite(norms([p.detach() for p in self._params]))
            bad_rank = self._agree(not ok)
            if bad_rank is not None:
                self.iteration += 1
                if bad_rank != self.rank:
                    self._fail_remote("param", bad_rank)
                else:
                    self._fail("param", self._param_findings("param"))
                return
        if self._scaler_patch is None or not self._scaler_patch.enabled():
            self.iteration += 1
            self._log_step(None)

    def _on_update(self, before: float, after: float) -> None:
        """After GradScaler.update(): a step without an optimizer step was skipped."""
        if self._paused:
            return
        skipped = not self._stepped
        self._stepped = False
        self.iteration += 1
        self._micro = 0
        self._incident_open = False
        self._clip = None
        self._loss_unread = None
        flags, idx = self._rec.take_backward()  # read only for a skipped step
        if not skipped:
            self._skips.stepped()
            self._log_step(after)
            return
        if not self._loss_finite:
            return  # already reported as a loss event
        where: dict[str, Any] = {}
        if flags:  # where the overflowing gradient was first seen in backward
            vals = read_floats(flags)
            k = next((k for k, v in enumerate(vals) if not math.isfinite(v)), None)
            if k is not None:
                where = {
                    "module": self._names[idx[k]],
                    "kind": "nan" if vals[k] != vals[k] else "inf",
                }
        if not where:  # else the first parameter whose gradient overflowed
            where = self._first_nonfinite_grad()
        reason = self._skips.skipped(after)
        event = make_event(
            ev.AMP_SKIP,
            step=self.step,
            iteration=self.iteration,
            phase="grad",
            rank=self.rank,
            origin=False,
            scale_before=before,
            scale=after,
            loss=float(self._loss.float().item()) if self._loss is not None else None,
            consecutive=self._skips.consecutive,
            **where,
        )
        self._emit(event)
        self._loss = None
        if reason is not None:
            div = dict(event)
            div.update(event=ev.AMP_DIVERGENCE, reason=reason, origin=True)
            self._fail_events([div])

    def _first_nonfinite_grad(self) -> dict[str, Any]:
        present = [(n, p.grad) for n, p in zip(self._param_names, self._params, strict=True)]
        present = [(n, g) for n, g in present if g is not None]
        if not present:
            return {}
        values = stack_on(norms([g for _, g in present]), present[0][1].device).tolist()
        for (name, _), v in zip(present, values, strict=True):
            if not math.isfinite(v):
                return {"module": name, "kind": "nan" if v != v else "inf"}
        return {}

    def _log_step(self, scale: float | None) -> None:
        """Record a completed step. Its events (the norm, explosion, vanishing, statistics) are
        built a second's worth at a time, or as soon as another event, `events` or stop() needs
        them in order: a step only appends one tuple."""
        pending, self._pending = self._pending, None
        self._loss = None  # the next step's loss is its own
        if pending is None:
            return
        self.last_grad_norm = pending[0]
        steps = self._unbuilt
        steps.append((self.step, self.iteration, scale, time.time(), pending))
        now = time.monotonic()
        if len(steps) == 1:
            self._unbuilt_since = now
        elif now - self._unbuilt_since > EventLog.FLUSH_EVERY_S:
            self._build_steps()

    def _build_steps(self) -> None:
        """Turn the recorded steps into events, in order."""
        steps = self._unbuilt
        if not steps:
            return
        self._unbuilt = []
        emit = self._log.emit
        for step, iteration, scale, when, (total, present, values, loss, rows, clip) in steps:
            for event in step_events(
                step=step,
                iteration=iteration,
                rank=self.rank,
                total=total,
                present=present,
                values=values,
                loss=loss,
                scale=scale,
                rows=rows,
                groups=self._groups,
                names=self._param_names,
                explosion=self._explosion,
                when=when,
                clip=clip,
            ):
                emit(event)

    def _write_at_exit(self) -> None:
        self._build_steps()
        self._log.flush()

    def _emit(self, event: Event) -> None:
        """Log one event after the steps recorded before it."""
        self._build_steps()
        self._log.emit(event)

    # ------------------------------------------------------------------ failure path
    def _paused_call(self, fn: Callable[..., list[Finding]], *args: Any) -> list[Finding]:
        was = self._paused
        self._paused = True
        try:
            return fn(*args)
        except Exception:
            return []
        finally:
            self._paused = was

    def _from_flags(self, flags: list[Tensor], idx: list[int], tensor: str) -> list[Finding]:
        return from_flags(flags, idx, self._names, tensor, self.max_findings)

    def _param_findings(self, phase: str) -> list[Finding]:
        return param_findings(self._param_names, self._params, phase, self.max_findings)

    def _fail(self, phase: str, findings: list[Finding]) -> None:
        where = {
            "step": self.step,
            "iteration": self.iteration,
            "rank": self.rank,
            "micro_batch": max(self._micro - 1, 0),
        }
        self._fail_events([to_event(f, phase, static=self.static, **where) for f in findings])

    def _fail_remote(self, phase: str, source_rank: int) -> None:
        event = make_event(
            ev.NONFINITE_REMOTE,
            step=self.step,
            iteration=self.iteration,
            phase=phase,
            rank=self.rank,
            origin=False,
            source_rank=source_rank,
        )
        self._fail_events([event])

    def _fail_events(self, events: list[Event]) -> None:
        """Report one incident: snapshot, log, action. A failure later in the step of an
        incident already reported is its consequence and is dropped; an incident identical to
        the previous one (a parameter left NaN, fed to every later step) is counted, and the
        run is logged once it ends as one `nonfinite_repeated` event."""
        origin = next((e for e in events if e.get("origin")), events[0])
        if self._incident_open:
            return
        self._incident_open = True
        self.failed = True
        sig = tuple(origin.get(k) for k in ("event", "phase", "module", "kind", "source_rank"))
        if sig == self._last_sig:
            self._count_repeat(origin)
            if self.action == "raise":
                raise NonFiniteError(origin, events, self.snapshot)
            return
        self._build_steps()
        self._end_repeat()
        self._last_sig = sig
        self.incidents += 1
        if self.incidents <= self.max_snapshots:
            self.snapshot = self._save_snapshot(origin)
            if isinstance(self.snapshot, Path):
                for e in events:
                    e["snapshot"] = str(self.snapshot)
        for e in events:
            e["incident"] = self.incidents
            self._log.emit(e)
        if self.action == "raise":
            raise NonFiniteError(origin, events, self.snapshot)
        if self.action == "warn":
            warnings.warn(ev.describe(origin), NumlintWarning, stacklevel=3)

    def _count_repeat(self, origin: Event) -> None:
        rep = self._repeat
        if rep is None:
            keys = ("phase", "module", "kind", "tensor", "source_rank")
            rep = self._repeat = make_event(
                ev.REPEATED,
                of=origin["event"],
                rank=self.rank,
                incident=self.incidents,
                count=0,
                first_step=self.step,
                first_iteration=self.iteration,
                **{k: origin.get(k) for k in keys},
            )
        rep.update(count=rep["count"] + 1, step=self.step, iteration=self.iteration)

    def _end_repeat(self) -> None:
        """Log the run of repeated incidents counted so far, if any."""
        rep, self._repeat = self._repeat, None
        if rep is not None:
            self._log.emit(rep)

    def _save_snapshot(self, event: Event) -> Any:
        grads = self._rec.out_grads
        path = self.snapshot_path
        if path is not None and self.incidents > 1:
            path = path.with_name(f"{path.stem}.{self.incidents}{path.suffix}")
        try:
            data = snap_mod.build(
                event=event,
                model=self.model,
                optimizer=self.optimizer,
                scaler=self.scaler,
                args=self._args,
                kwargs=self._kwargs,
                rng=self._rng,
                grad_enabled=self._grad_enabled,
                output_grads=grads if grads and any(g is not None for g in grads) else None,
                targets=self._targets,
            )
            if path is None:
                return data
            return snap_mod.save(data, path)
        except Exception as exc:  # a failed snapshot must not hide the real error
            warnings.warn(f"numlint: could not save snapshot: {exc}", NumlintWarning, stacklevel=2)
            return None


def watch(
    model: nn.Module,
    optimizer: torch.optim.Optimizer | None = None,
    *,
    scaler: Any = None,
    log: str | Path | None = DEFAULT_LOG,
    action: Action = "raise",
    **options: Any,
) -> Monitor:
    """Monitor `model` for the first NaN/Inf, gradient norms and AMP overflow.

    Returns an inactive Monitor; `with monitor:` installs the hooks and removes them on exit
    (also after an exception). `optimizer=None` picks up whichever torch optimizer steps this
    model's parameters. `log=None` writes no file. `action`: "raise" (NonFiniteError),
    "warn" (NumlintWarning) or "record" (events only). Options: criterion (an nn.Module loss whose
    value is checked and whose targets go into the snapshot), snapshot ("auto": next to the log;
    a path; None), grad_stats (per-parameter statistics every N steps), explosion_factor,
    explosion_window, explosion_warmup, max_skips, min_scale, check_backward, check_params
    ("forward": a parameter made non-finite by a step is caught by the next forward at no
    per-step cost; "step": checked after every step; False), static (list static findings for
    the origin's source file), ignore (glob patterns of module names whose outputs may hold
    Inf by design, e.g. mask builders), max_events, max_findings, max_snapshots (one snapshot
    per incident, up to this many), max_log_bytes (the JSONL file is rotated to `.1` past this
    size; None: unbounded)."""
    return Monitor(model, optimizer, scaler=scaler, log=log, action=action, **options)


__all__ = ["Monitor", "NonFiniteError", "NumlintWarning", "watch"]
