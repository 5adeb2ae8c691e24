"""The training-loop monitor: `watch(model, optimizer)` and the Monitor it returns.

The Monitor is a small core: it installs the hooks (the top-level forward, optimizer.step,
backward(), GradScaler, and with `module_hooks` the fast-path flags of `hooks`), keeps what a
failing step needs to be re-run (its batch and RNG state; the gradient at the model output
when `check_backward`), and at each read point ("forward", "loss", "backward", "step",
"param": see `checks._base`) asks every check for its device values, reads them all at once
(one host read: a plain load of each value on the CPU, one synchronisation on an accelerator)
and lets each judge its own. The first check that failed on the rank where the value began
reports it; the core turns that into an incident (events, snapshot, action). The checks live
in `numlint.monitor.checks`, one file each: forward outputs, the loss, backward gradients, DDP
gradient buckets, gradient norms (logged every step, explosions, vanishing), parameters, AMP
skips.

A training step with an optimizer is lean by default: no hook on any submodule and no flag;
before optimizer.step the monitor reads the loss and every gradient's norm itself (one
multi-tensor norm, one read: `_pre_step`) and, when they are finite, only records the step.
Everything else happens on the failure path, once a value is not finite: the model outputs
are checked (a NaN from the forward shows in the loss or the gradients), the step is re-run
with per-module checks to name where the value began, and the gradient at the model output
is worked out from the loss computed again (`output_grads`). `module_hooks=True` adds the
per-module flags (a value that a later op hides, a gradient that a ReLU drops).

Incidents (what happens once a check has found where a value began: events, snapshot, action,
consequences and repeats) are handled by `incidents`.
"""

from __future__ import annotations

import atexit
import fnmatch
import math
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal

import torch
from torch import Tensor, nn

from numlint.monitor import distributed as dist
from numlint.monitor import events as ev
from numlint.monitor import lossrun
from numlint.monitor.amp import ScalerPatch
from numlint.monitor.checks import all_checks
from numlint.monitor.checks._base import LOCAL, OK, PHASE_OF, SPREAD, Check, Point
from numlint.monitor.events import Event, EventLog, NonFiniteError, make_event
from numlint.monitor.findings import Finding, param_findings, to_event
from numlint.monitor.grads import ParamGroup
from numlint.monitor.hooks import FlagRecorder
from numlint.monitor.incidents import Incidents, NumlintWarning
from numlint.monitor.locate import ForwardState, any_autocast, autocast_now, draws_random
from numlint.monitor.lossrun import LossRun
from numlint.monitor.stats import flat_tensors, read_floats

Action = Literal["raise", "warn", "record"]
ACTIONS = ("raise", "warn", "record")
DEFAULT_LOG = "numlint-events.jsonl"


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
        loss_fn: Callable[[Any], Any] | None = None,
        snapshot: str | Path | Literal["auto"] | None = "auto",
        grad_stats: bool | int = False,
        explosion_factor: float = 10.0,
        explosion_window: int = 100,
        explosion_warmup: int = 10,
        max_skips: int = 10,
        min_scale: float = 1.0,
        check_backward: bool | None = None,
        check_params: Literal["forward", "step"] | bool = "forward",
        module_hooks: bool | None = None,
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
        if loss_fn is not None and not callable(loss_fn):
            raise TypeError(f"loss_fn must be callable, got {type(loss_fn).__name__}")
        self.loss_fn = loss_fn
        self.grad_stats_every = int(grad_stats)  # True: every step; N: every N steps
        self.explosion = (explosion_factor, explosion_window, explosion_warmup)
        self.max_skips = max_skips
        self.min_scale = min_scale
        # (None: per-module flags only without an optimizer: a training step stays lean)
        self._optimizer_given = optimizer is not None
        self.module_hooks = optimizer is None if module_hooks is None else bool(module_hooks)
        # (None: kept whenever flags are, or under several processes; in a lean training
        # step the gradient at the model output is worked out on the failure path instead,
        # from the loss computed again: see `output_grads`)
        self._check_backward = check_backward
        self.check_params = "forward" if check_params is True else check_params
        self.static = static
        self.ignore = tuple(ignore)
        self.max_findings = max_findings
        self.max_snapshots = max_snapshots
        self.rank = dist.rank()
        self.world = dist.world_size()
        self.check_backward = self._backward_kept()
        self.log_path = self._log_path(log)
        self.snapshot_path = self._snapshot_path(snapshot, self.log_path)
        self.log = EventLog(self.log_path, max_events, max_log_bytes)
        self.handles: list[Any] = []
        self.scaler_patch: ScalerPatch | None = None
        self.scaling = False  # an enabled GradScaler is watched (see scaler_on)
        self.checks: list[Check] = []
        self._dispatch()
        self._active = False
        # per-step state
        self.step = 0  # optimizer steps completed
        self.iteration = 0  # optimizer steps attempted (GradScaler skips included)
        self.micro = 0  # forwards since the last optimizer step (gradient accumulation)
        self.failed = False
        self.snapshot: Any = None
        self.last_grad_norm: float | None = None
        self.rec = FlagRecorder(self._end_backward, self.check_backward)  # fast-path flags
        self.args: tuple[Any, ...] | None = None  # the last forward's batch, RNG and modes
        self.kwargs: dict[str, Any] | None = None
        self._rng: tuple[Any, ...] | ForwardState | None = None  # (see `rng`)
        self.grad_enabled = True
        self.thread = threading.get_ident()  # the thread that ran the last forward
        self.targets: tuple[Any, ...] | None = None  # the criterion's, for the snapshot
        self.output: Any = None  # the last top-level forward's output (for re-running the loss)
        self.criterion_call: tuple[Any, ...] | None = None  # the criterion's last (args, kwargs)
        # (code, bytecode offset) that called backward(): see lossrun.line_at
        self.backward_site: tuple[Any, int] | None = None
        self.loss: Tensor | None = None  # the step's loss (logged, checked before the step)
        self.loss_value: float | None = None  # ... as read before the step
        self.loss_finite = True  # the last loss checked at a criterion or scaler call
        self.output_flagged = True  # the last forward's outputs were flagged (see _root_post)
        self.backward_seen = False  # backward() was called on a loss since the last step
        self._derived_for: Any = None  # the output whose gradient `output_grads` worked out
        self._stepped = False
        self._count_at_pre = False  # (see _install_optimizer_hooks)
        self._keep_rng = True  # (see start)
        self._opt_seen: dict[int, bool] = {}
        self._incidents = Incidents(self)

    # ------------------------------------------------------------------ set-up
    def _backward_kept(self) -> bool:
        """Whether a hook keeps the gradient at the model output (`check_backward`)."""
        if self._check_backward is not None:
            return bool(self._check_backward)
        # (distributed: the loss expression is not run again, the other ranks would wait)
        return self.module_hooks or not self._optimizer_given or self.world > 1

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
        self.emit_pending()
        return self.log.event_list()

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
        self.log.open()
        atexit.register(self._write_at_exit)  # a monitor never stopped still logs its last steps
        self.rank = dist.rank()
        self.world = dist.world_size()
        self.check_backward = self.rec.check_backward = self._backward_kept()
        # (a lean step keeps the RNG state only for a model that draws random numbers)
        self._keep_rng = self.module_hooks or draws_random(self.model)
        named = list(self.model.named_modules())
        self.names = [n for n, _ in named]
        self.name_of: dict[nn.Module, str] = {m: n for n, m in named}
        named_params = [(n, p) for n, p in self.model.named_parameters() if p.requires_grad]
        self.param_names = [n for n, _ in named_params]
        self.params = [p for _, p in named_params]
        self.param_ids = {id(p) for p in self.params}
        self.groups = self._groups_from(self.optimizer)
        self.rec.end_callback = self.optimizer is None
        try:
            for i, (name, module) in enumerate(named):
                if not self.module_hooks or module is self.model or self.ignored(name):
                    continue
                hook = self.rec.forward_hook(i, module)
                self.handles.append(module.register_forward_hook(hook))
            self._install_root()
            self._install_optimizer_hooks()
            if self.scaler is not None:
                self.scaler_patch = ScalerPatch(self.scaler, self._on_scale, self._on_update)
                self.scaling = self.scaler_patch.enabled()
            self.checks = [cls(self) for cls in all_checks()]
            for check in self.checks:
                check.start()
            self._dispatch()
        except BaseException:
            self.stop()
            raise
        self._active = True
        self.paused = False
        return self

    def stop(self) -> None:
        """Remove every hook and restore the scaler; safe to call twice and after errors."""
        self.paused = True
        for h in self.handles:
            h.remove()
        self.handles.clear()
        if self.scaler_patch is not None:
            self.scaler_patch.remove()
            self.scaler_patch = None
        self.scaling = False
        for check in self.checks:
            check.stop()
        atexit.unregister(self._write_at_exit)
        self.emit_pending()
        self._incidents.end_repeat()
        self.log.close()
        self._active = False
        self.rec.take_forward()
        self.rec.take_backward()
        # (the output's autograd graph holds the monitor's gradient hooks: a cycle the garbage
        # collector cannot see through, so nothing of the step is kept past stop())
        self.output = self.criterion_call = None

    def agree(self, local_bad: bool, spread_bad: bool = False) -> int | None:
        """None when no rank saw a non-finite value, else the rank where it began (see
        `dist.agree`; one all-reduce when distributed, nothing to ask otherwise)."""
        if self.world == 1:
            return self.rank if local_bad or spread_bad else None
        return dist.agree(local_bad, spread_bad)

    def ignored(self, name: str) -> bool:
        """The module is one the user asked to ignore (`ignore=` glob patterns)."""
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in self.ignore)

    @property
    def rng(self) -> ForwardState | None:
        """The RNG state and autocast modes the last forward ran with."""
        state = self._rng
        if type(state) is tuple:
            cpu, cuda, autocast = state
            state = self._rng = ForwardState(cpu, cuda, list(autocast))
        return state  # type: ignore[return-value]

    @rng.setter
    def rng(self, value: ForwardState | None) -> None:
        self._rng = value

    @property
    def paused(self) -> bool:
        """True while the hooks do nothing (stopped, or the failure path re-running a step)."""
        return self.rec.paused

    @paused.setter
    def paused(self, value: bool) -> None:
        self.rec.paused = value

    @property
    def _rec(self) -> FlagRecorder:
        """`rec`, by its earlier name."""
        return self.rec

    @property
    def active(self) -> bool:
        """True between start() and stop()."""
        return self._active

    def rerun_model(self) -> nn.Module | None:
        """The module the failure path re-runs a step on, or None when it cannot: DDP's inner
        module (the wrapper's forward would broadcast buffers from this rank alone); none under
        FSDP2 on several ranks (a forward all-gathers parameters with every rank)."""
        model = self.model
        if self.world > 1:
            from torch.nn.parallel import DistributedDataParallel

            if isinstance(model, DistributedDataParallel):
                return model.module
            try:
                from torch.distributed.fsdp import FSDPModule
            except ImportError:
                return model
            if any(isinstance(m, FSDPModule) for m in model.modules()):
                return None
        return model

    def scaler_on(self) -> bool:
        """An enabled GradScaler is watched (it skips overflowing steps by itself)."""
        return self.scaling

    def _groups_from(self, optimizer: torch.optim.Optimizer | None) -> list[ParamGroup]:
        index = {id(p): i for i, p in enumerate(self.params)}
        if optimizer is not None:
            groups = []
            for g, group in enumerate(optimizer.param_groups):
                ids = [index[id(p)] for p in group["params"] if id(p) in index]
                groups.append(ParamGroup(str(group.get("name", f"group{g}")), ids))
            return groups
        by_child: dict[str, list[int]] = {}
        for i, name in enumerate(self.param_names):
            by_child.setdefault(name.split(".", 1)[0], []).append(i)
        return [ParamGroup(k, v) for k, v in by_child.items()]

    def _install_root(self) -> None:
        """Watch the top-level forward: by taking the model's call slot (`_compiled_call_impl`,
        the per-instance entry `nn.Module.__call__` consults first, left out when a module is
        copied or pickled) where it is free, which costs a plain function call; else with a
        forward pre-hook and hook, which send every call of the model down the slower hooked
        path of `nn.Module`."""
        root = self.model
        if _CALL_SLOT and type(root).__call__ is nn.Module.__call__:
            if root.__dict__.get("_compiled_call_impl") is None:  # (not compiled by the user)
                self.handles.append(_CallSlot(root, self._root_pre, self._root_post, self.rec))
                return
        self.handles.append(root.register_forward_pre_hook(self._root_pre, with_kwargs=True))
        self.handles.append(root.register_forward_hook(self._root_post, with_kwargs=True))

    def _install_optimizer_hooks(self) -> None:
        # Without a GradScaler (which may skip the step) and a parameter check after the step,
        # nothing waits for the step to be over: it is counted as soon as it is read, one
        # hook a step.
        self._count_at_pre = self.scaler is None and self.check_params != "step"
        if self.optimizer is not None:
            self.handles.append(self.optimizer.register_step_pre_hook(self._pre_step))
            if not self._count_at_pre:
                self.handles.append(self.optimizer.register_step_post_hook(self._post_step))
            return
        from torch.optim.optimizer import (
            register_optimizer_step_post_hook,
            register_optimizer_step_pre_hook,
        )

        self.handles.append(register_optimizer_step_pre_hook(self._global_pre_step))
        if not self._count_at_pre:
            self.handles.append(register_optimizer_step_post_hook(self._global_post_step))

    def _owns(self, opt: torch.optim.Optimizer) -> bool:
        known = self._opt_seen.get(id(opt))
        if known is None:
            mine = self.param_ids
            known = any(id(p) in mine for g in opt.param_groups for p in g["params"])
            self._opt_seen[id(opt)] = known
            if known and self.optimizer is None:
                self.optimizer = opt
                self.groups = self._groups_from(opt)
                self.rec.end_callback = False
        return known

    def _global_pre_step(self, opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        if self._owns(opt):
            self._pre_step(opt, args, kwargs)

    def _global_post_step(self, opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        if self._owns(opt):
            self._post_step(opt, args, kwargs)

    def _dispatch(self) -> None:
        """Per read point, the active checks that read values there (`Check.POINTS`), and per
        hook, the active checks that override it: a step calls no check that has nothing to
        do."""
        checks = [c for c in self.checks if c.active]
        self._at: dict[str, list[Check]] = {
            p: [c for c in checks if c.reads(p)]
            for p in PHASE_OF  # type: ignore[arg-type]
        }

        def overriding(name: str) -> list[Check]:
            return [c for c in checks if getattr(type(c), name) is not getattr(Check, name)]

        self._on_step_done = overriding("step_done")
        self._on_skipped = overriding("step_skipped")
        self._on_scaled = overriding("scaled")
        self._on_flush = overriding("flush")
        self._claiming = overriding("claims")
        # A lean step (no flags, one process, no GradScaler, nothing that waits for the step
        # to end) reads only the loss and the gradient norms: the monitor reads them itself,
        # in one go, and records and counts the step there (see _pre_step).
        at_step = self._at["step"]
        kinds = [type(c).__name__ for c in at_step]
        lean = kinds == ["LossCheck", "GradientCheck"] and self._count_at_pre
        self._fast = tuple(at_step) if lean and self._on_step_done == at_step[1:] else None

    # ------------------------------------------------------------------ read points
    def check(self, point: Point) -> bool:
        """Read every check's values at `point` at once and let each judge its own (a check
        that only asks for finite values is not asked when every value is finite); report the
        first failing check of the rank where the value began. True when one failed on some
        rank."""
        checks = self._at[point]
        ends = []
        flat: list[Tensor] = []
        for c in checks:
            flat += c.values(point)
            ends.append(len(flat))
        read = read_floats(flat) if flat else []
        finite = all(map(math.isfinite, read))
        worst, culprit, k = OK, None, 0
        for c, n in zip(checks, ends, strict=True):
            if not (finite and c.FLAGS_ONLY):
                verdict = c.judge(read[k:n], point)
                if verdict > worst:
                    worst, culprit = verdict, c
            k = n
        if worst == OK and self.world == 1:
            return False
        bad_rank = self.agree(worst == LOCAL, worst == SPREAD)
        if bad_rank is None:
            return False
        if bad_rank != self.rank:
            self.fail_remote(PHASE_OF[point], bad_rank)
        elif culprit is not None:
            for c in self._claiming:  # (an earlier value read on the failure path only)
                if c.PRIORITY < culprit.PRIORITY and c.claims(point):
                    culprit = c
                    break
            culprit.report(point)
        return True

    def _root_pre(self, module: nn.Module, args: Any, kwargs: Any) -> None:
        rec = self.rec
        if rec.paused:
            return
        # (an output no step has taken: a forward or backward pass no step has read)
        if self.output is not None or rec.fflags or rec.bflags:
            self._read_earlier_passes()
        else:
            self._incidents.open = False  # the last step is over (taken or dropped)
        # the RNG state, as ForwardState.capture() takes it (the object is made when needed),
        # when the model draws random numbers (see locate.draws_random)
        cpu = cuda = None
        if self._keep_rng:
            cpu = _cpu_rng_state()
            if _cuda._initialized and _cuda.is_initialized():  # (a flag read first)
                cuda = _cuda.get_rng_state_all()
        self._rng = (cpu, cuda, autocast_now() if any_autocast() else ())
        self.grad_enabled = _grad_enabled()
        rec.out_grads = None
        rec._queued = False  # in case a backward pass died before its end callback

    def _read_earlier_passes(self) -> None:
        """Before a forward: read the flags of an earlier forward or backward pass that no
        step has read (no optimizer step since: gradient accumulation, evaluation)."""
        rec = self.rec
        out_grads = rec.out_grads
        backward_seen = self.backward_seen or (
            out_grads is not None and any(g is not None for g in out_grads)
        )
        self.backward_seen = False
        if not (self.output_flagged or backward_seen or rec.bflags) and self.output is not None:
            # A training forward that no backward followed (a batch the loop dropped): its
            # outputs got no flag, since no loss or gradient will show a non-finite one.
            rec.flag_outputs(self.output)
            self.output_flagged = True
        if rec.fflags:  # a forward whose flags wait for the step: read them while its
            self.check("forward")  # batch is still the one to re-run
        if (rec.bflags or backward_seen and self.optimizer is not None) and not self.scaling:
            # A backward pass with no optimizer step since (gradient accumulation): check it
            # now, while its micro-batch is still here to re-run.
            self.check("backward")
        elif not backward_seen:
            self._incidents.open = False  # the last step is over (taken or dropped)

    def _root_post(self, module: nn.Module, args: Any, kwargs: Any, output: Any) -> None:
        rec = self.rec
        if rec.paused:
            return
        # A forward with no optimizer step after it (evaluation, no optimizer known, or an AMP
        # step that may be skipped) is checked at its end; in a training step its flags are
        # read with the step's other values (one read per step; a NaN found there is still
        # reported as the forward's). Without module hooks a training step's outputs get no
        # flag: a non-finite output shows in the loss or the gradients read before the step,
        # and the failure path then checks the outputs themselves (ForwardCheck.claims).
        at_end = self.optimizer is None or not self.grad_enabled or self.scaler_patch is not None
        self.output_flagged = flagged = at_end or self.module_hooks
        if flagged or type(output) is not Tensor:
            rec.root_outputs(output, flagged)
        elif self.check_backward:  # (one tensor, its gradient kept only)
            rec.keep_root_grad(output)
        self.args = args
        self.kwargs = kwargs
        self.output = output
        self.thread = _get_ident()
        self.micro += 1
        if at_end and rec.fflags:
            self.check("forward")

    def drain_forward(self) -> None:
        """Read forward flags left by submodules called on their own (or recomputed by
        activation checkpointing) before backward ends or a step."""
        if self.rec.fflags:
            self.check("forward")

    def _end_backward(self) -> None:
        """Runs once when the autograd engine finishes a backward pass, while no optimizer is
        known (with one, the backward flags are read with the gradient norms before its step)."""
        rec = self.rec
        rec._queued = False
        if rec.paused:
            return
        self.drain_forward()
        if not self.scaling:  # (GradScaler skips overflowing steps: flags wait for update)
            self.check("backward")

    def _check_pending(self) -> None:
        """On leaving the `with` block: read flags no check point has read yet (a last
        backward pass not followed by an optimizer step)."""
        rec = self.rec
        if not self._active or rec.paused:
            return
        self.drain_forward()
        if rec.bflags and not self.scaling:
            self.check("backward")

    def _on_scale(self, outputs: Any) -> None:
        if not self.paused:
            for c in self._on_scaled:
                c.scaled(outputs)

    def _pre_step(self, opt: Any, args: Any, kwargs: Any) -> None:
        """Before optimizer.step: the step's values (gradient norms, backward flags, loss...)
        in one read."""
        rec = self.rec
        if rec.paused:
            return
        self._stepped = True
        if self._fast is not None:
            loss_check, grad_check = self._fast
            if grad_check.lean_step(loss_check.take()):
                # (as the path below and _post_step do, on a step with nothing to report)
                rec.out_grads = self.output = self.criterion_call = self.loss = None
                self.backward_seen = False
                self.step += 1
                self.iteration += 1
                self.micro = 0
                self._incidents.open = False
                return
        try:
            self.check("step")  # (the forward flags too: ForwardCheck reads them here)
        finally:
            # The gradient at the model output is needed no more: holding it on past the step
            # would keep a large block (an LM head's) from the allocator through the next step.
            # (Nor are the forward and backward passes the step has read, also if it failed.)
            self.rec.out_grads = self.output = None
            self.backward_seen = False
        if self._count_at_pre:
            self._post_step(opt, args, kwargs)

    def _post_step(self, opt: Any, args: Any, kwargs: Any) -> None:
        """After optimizer.step: count the step; with check_params="step", check parameters
        (one multi-tensor norm, one read). By default ("forward") a parameter the step made
        non-finite is found, at no per-step cost, by the next forward's check, and reported
        with phase "param" at the same step."""
        if self.rec.paused:
            return
        self.step += 1
        self.micro = 0
        self._incidents.open = False
        if self.check_params == "step" and self.params and self.check("param"):
            self.iteration += 1
            return
        if not self.scaling:
            self.iteration += 1
            self._step_done(None)

    def _on_update(self, before: float, after: float) -> None:
        """After GradScaler.update(): a step without an optimizer step was skipped."""
        if self.paused:
            return
        skipped = not self._stepped
        self._stepped = False
        self.iteration += 1
        self.micro = 0
        self._incidents.open = False
        if skipped:
            for c in self._on_skipped:
                c.step_skipped(before, after)
            self.loss = None
            self.backward_seen = False
        else:
            self._step_done(after)
        self.rec.take_backward()  # (read by the AMP check for a skipped step)

    def _step_done(self, scale: float | None) -> None:
        for c in self._on_step_done:
            c.step_done(scale)
        self.backward_seen = False
        self.loss = None  # the next step's loss is its own
        self.output = self.criterion_call = None

    def emit_pending(self) -> None:
        """Log the events the checks hold back (the steps recorded so far)."""
        for c in self._on_flush:
            c.flush()

    def _write_at_exit(self) -> None:
        self.emit_pending()
        self.log.flush()

    def emit(self, event: Event) -> None:
        """Log one event after the events the checks hold back."""
        self.emit_pending()
        self.log.emit(event)

    # ------------------------------------------------------------------ failure path
    def paused_call(self, fn: Callable[..., Any], *args: Any, default: Any = None) -> Any:
        """Run a failure-path helper with the hooks silenced (`default` if it raises)."""
        was = self.paused
        self.paused = True
        try:
            return fn(*args)
        except Exception:
            return default
        finally:
            self.paused = was

    def loss_run(self) -> LossRun | None:
        """How to compute this step's loss again (failure path): `loss_fn` on the last output,
        the criterion's last call, or the expression the loop called `backward()` on."""
        if self.loss_fn is not None and self.output is not None:
            return lossrun.from_function(self.loss_fn, self.output)
        if self.criterion_call is not None:
            args, kwargs = self.criterion_call
            return lossrun.from_call(self.criterion, args, kwargs)
        if self.backward_site is not None and self.world == 1:
            # (not distributed: the expression may call the model, whose forward the other
            # ranks would have to join)
            code, offset = self.backward_site
            return self.paused_call(lossrun.from_frame, code, lossrun.line_at(code, offset))
        return None

    def output_grads(self) -> list[Tensor | None]:
        """The gradient of the loss with respect to each model output in this step: as a hook
        kept it (check_backward), else worked out once from the loss computed again (see
        `lossrun.output_grads`; failure path only). Empty when neither can be had."""
        grads = self.rec.out_grads
        if grads is not None or self.output is None or self._derived_for is self.output:
            return grads or []
        self._derived_for = self.output
        run = self.loss_run()
        if run is None or self.loss is None:
            return []
        outs = flat_tensors(self.output)
        call = (self.args, self.kwargs or {}) if self.args is not None else None
        found = self.paused_call(
            lossrun.output_grads, run, outs, self.loss, self.rerun_model(), call, self.rng
        )
        if found is None:
            return []
        self.rec.out_grads = found
        return found

    def locate_loss(self) -> dict[str, Any] | None:
        """The op and line where the step's non-finite loss (or its non-finite gradient) began,
        by computing the loss again under per-op checks; None when it cannot be re-run."""
        run = self.loss_run()
        if run is None:
            return None
        if self.targets is None and run.targets:
            given = {id(t) for t in flat_tensors((self.args, self.kwargs))}
            targets = tuple(t for t in run.targets if id(t) not in given)  # (not the batch)
            self.targets = targets or None  # (kept in the snapshot)
        info = self.paused_call(lossrun.locate, run, self.rerun_model())
        if info is not None:
            info["loss_from"] = run.how
        return info

    def param_findings(self, phase: str) -> list[Finding]:
        """Parameters whose gradient ("grad") or value ("param") is non-finite."""
        return param_findings(self.param_names, self.params, phase, self.max_findings)

    def fail(self, phase: str, findings: list[Finding]) -> None:
        """Report an incident on this rank, from the findings of the failure path."""
        where = {
            "step": self.step,
            "iteration": self.iteration,
            "rank": self.rank,
            "micro_batch": max(self.micro - 1, 0),
        }
        self.fail_events([to_event(f, phase, static=self.static, **where) for f in findings])

    def fail_remote(self, phase: str, source_rank: int) -> None:
        """Report that another rank's non-finite value stops this one."""
        event = make_event(
            ev.NONFINITE_REMOTE,
            step=self.step,
            iteration=self.iteration,
            phase=phase,
            rank=self.rank,
            origin=False,
            source_rank=source_rank,
        )
        self.fail_events([event])

    @property
    def incident_open(self) -> bool:
        """An incident was reported in the current step (later failures are consequences)."""
        return self._incidents.open

    @property
    def incidents(self) -> int:
        """How many distinct incidents were reported."""
        return self._incidents.count

    def fail_events(self, events: list[Event]) -> None:
        """Report one incident (see `incidents.Incidents.report`)."""
        self._incidents.report(events)


_cpu_rng_state = torch.default_generator.get_state
_cuda = torch.cuda
_grad_enabled = torch.is_grad_enabled
_get_ident = threading.get_ident


#: `nn.Module.__call__` consults a per-instance `_compiled_call_impl` first (torch >= 2.2).
_WRAPPED_CALL = getattr(nn.Module, "_wrapped_call_impl", None)
_CALL_SLOT = _WRAPPED_CALL is not None and "_compiled_call_impl" in _WRAPPED_CALL.__code__.co_names


class _CallSlot:
    """The model's call slot taken for the monitor (see `Monitor._install_root`): `pre` and
    `post` run around the model's own call, hooks and all, while the recorder is not paused.
    `remove()` gives the slot back (unless someone else took it since)."""

    def __init__(
        self,
        model: nn.Module,
        pre: Callable[..., None],
        post: Callable[..., None],
        rec: FlagRecorder,
    ) -> None:
        self.model = model
        call_impl = model._call_impl

        def call(*args: Any, **kwargs: Any) -> Any:
            if rec.paused:
                return call_impl(*args, **kwargs)
            pre(model, args, kwargs)
            output = call_impl(*args, **kwargs)
            post(model, args, kwargs, output)
            return output

        self.call = call
        model.__dict__["_compiled_call_impl"] = call

    def remove(self) -> None:
        d = self.model.__dict__
        if d.get("_compiled_call_impl") is self.call:
            del d["_compiled_call_impl"]


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
    value is checked and whose targets go into the snapshot), loss_fn (`loss_fn(output)`: how the
    loss is computed from the model output, re-run on the failure path to name the op and line
    of a loss-origin NaN; without it the criterion's call or the expression `backward()` was
    called on is re-run), snapshot ("auto": next to the log;
    a path; None), grad_stats (per-parameter statistics every N steps), explosion_factor,
    explosion_window, explosion_warmup, max_skips, min_scale, check_backward (a hook keeps the
    gradient at the model output until the step, and with module hooks the gradient flowing
    into every module is flagged; default: with module hooks, without an optimizer, or under
    several processes; else the failure path works that gradient out from the loss computed
    again), check_params ("forward": a parameter made non-finite by a step is caught by the
    next forward at no per-step cost; "step": checked after every step; False), module_hooks
    (True: a flag on every submodule's output and on the gradients flowing into them, read
    once per step; a value that a later op hides, masked or clamped away, or a NaN gradient
    that a ReLU drops, is caught too, and a failure that does not happen again when re-run is
    still named at its module. Default: on without an optimizer (one pass: evaluation,
    `numlint.stress`), off in a training loop given its optimizer, whose step then reads only
    the loss and the gradient norms: a non-finite value is caught where it reaches the loss or
    the gradients and the failure path names the module where it began by re-running the
    step), static (list static findings for the origin's source file), ignore (glob patterns of
    module names whose outputs may hold Inf by design, e.g. mask builders), max_events,
    max_findings, max_snapshots (one snapshot per incident, up to this many), max_log_bytes
    (the JSONL file is rotated to `.1` past this size; None: unbounded)."""
    return Monitor(model, optimizer, scaler=scaler, log=log, action=action, **options)


__all__ = ["Monitor", "NonFiniteError", "NumlintWarning", "watch"]
