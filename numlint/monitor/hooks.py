"""The fast path: hooks that reduce every module output and every gradient flowing back into a
module to one on-device flag, without reading it (no host synchronisation per layer).

A flag is the sum of a tensor: a 0-dim device tensor that is non-finite iff the tensor holds a
NaN or an Inf (see `stats.flag`). Flags are appended to a list in call order, with the index of
the module that produced them; the Monitor reads a whole list at once (see `Monitor.check`).
A flag that another check makes redundant is never computed (see `forward_hook`)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn
from torch.autograd import Variable

from numlint.monitor.stats import flag, flat_tensors, is_checked

# Modules whose output is finite whenever their single input is: the output reuses the flag of
# that input when it was the tensor flagged last, which saves one reduction. (Dropout scales by
# 1/(1-p), so it could overflow only inputs already within a factor of FLT_MAX.)
FINITE_PRESERVING: tuple[type[nn.Module], ...] = (
    nn.ReLU,
    nn.ReLU6,
    nn.LeakyReLU,
    nn.ELU,
    nn.SELU,
    nn.CELU,
    nn.GELU,
    nn.SiLU,
    nn.Mish,
    nn.Tanh,
    nn.Sigmoid,
    nn.Hardtanh,
    nn.Hardswish,
    nn.Hardsigmoid,
    nn.Softsign,
    nn.Softmax,
    nn.LogSoftmax,
    nn.Dropout,
    nn.Dropout1d,
    nn.Dropout2d,
    nn.Dropout3d,
    nn.Identity,
    nn.Flatten,
    nn.Unflatten,
    nn.MaxPool1d,
    nn.MaxPool2d,
    nn.MaxPool3d,
    nn.AdaptiveMaxPool1d,
    nn.AdaptiveMaxPool2d,
    nn.AdaptiveMaxPool3d,
)


# Modules whose parameter gradients are full reductions over the gradient of their output
# (Linear/Conv: dW = g^T x and db = sum g; norms: dgamma = sum g * xhat, dbeta = sum g): a NaN or
# Inf anywhere in that gradient makes a parameter gradient non-finite (NaN * 0 is NaN), which the
# check before optimizer.step reads anyway. Their output gradient needs no flag of its own while
# their weight requires grad; the failure path still re-runs backward to name the module.
PARAM_COVERED: tuple[type[nn.Module], ...] = (
    nn.Linear,
    nn.Bilinear,
    nn.Conv1d,
    nn.Conv2d,
    nn.Conv3d,
    nn.ConvTranspose1d,
    nn.ConvTranspose2d,
    nn.ConvTranspose3d,
    nn.BatchNorm1d,
    nn.BatchNorm2d,
    nn.BatchNorm3d,
    nn.LayerNorm,
    nn.GroupNorm,
)


PROPAGATING: tuple[type[nn.Module], ...] = (
    nn.Linear,
    nn.BatchNorm1d,
    nn.BatchNorm2d,
    nn.BatchNorm3d,
    nn.LayerNorm,
    nn.GroupNorm,
    *((nn.RMSNorm,) if hasattr(nn, "RMSNorm") else ()),
)


# Modules whose input gradient is non-finite whenever their output gradient is (tested for NaN,
# +Inf and -Inf at every position): reshapes, Dropout (grad * mask: NaN * 0 is NaN), max pooling
# (each output gradient is added to one input position), average pooling, and activations whose
# derivative multiplies the gradient. Not ReLU, ReLU6, Hardtanh, Hardswish, Hardsigmoid: their
# backward selects (where(mask, grad, 0)), which drops a NaN. A module of these types whose input
# gradient is itself checked (flagged, or covered by a weight gradient) needs no gradient flag of
# its own. Exact types: a subclass may compute something else.
BACKWARD_PROPAGATING: frozenset[type[nn.Module]] = frozenset(
    {
        nn.Identity,
        nn.Flatten,
        nn.Unflatten,
        nn.Dropout,
        nn.Dropout1d,
        nn.Dropout2d,
        nn.Dropout3d,
        nn.AlphaDropout,
        nn.MaxPool1d,
        nn.MaxPool2d,
        nn.MaxPool3d,
        nn.AdaptiveMaxPool1d,
        nn.AdaptiveMaxPool2d,
        nn.AdaptiveMaxPool3d,
        nn.AvgPool1d,
        nn.AvgPool2d,
        nn.AvgPool3d,
        nn.AdaptiveAvgPool1d,
        nn.AdaptiveAvgPool2d,
        nn.AdaptiveAvgPool3d,
        nn.Tanh,
        nn.Sigmoid,
        nn.GELU,
        nn.SiLU,
        nn.Mish,
        nn.ELU,
        nn.SELU,
        nn.CELU,
        nn.LeakyReLU,
        nn.Softplus,
        nn.Softsign,
        nn.Softmax,
        nn.LogSoftmax,
    }
)


def gradient_covered(module: nn.Module) -> bool:
    """True when a non-finite gradient at the module's output must show in its weight's
    gradient (see PARAM_COVERED; an Embedding's weight gradient adds up every output gradient
    row, unless a padding row drops its own)."""
    weight = getattr(module, "weight", None)
    if not (isinstance(weight, Tensor) and weight.requires_grad):
        return False
    if isinstance(module, nn.Embedding):
        return module.padding_idx is None and not module.sparse
    return isinstance(module, PARAM_COVERED)


def queue_end_of_backward(fn: Callable[[], None]) -> None:
    """Run `fn` once the running backward pass finishes (the hook DDP itself relies on)."""
    Variable._execution_engine.queue_callback(fn)


def propagates(module: nn.Module) -> bool:
    """True when a NaN/Inf anywhere in the module's input makes its output non-finite too:
    Linear (every output of a row sums over the whole input row; NaN * 0 is NaN), the norms (a
    mean over the row, channel or group), convolutions whose windows cover every input element
    (stride <= kernel, no dilation), and transposed convolutions."""
    if isinstance(module, PROPAGATING):
        return True
    if isinstance(module, nn.modules.conv._ConvNd):
        if module.transposed:
            return True
        return all(d == 1 for d in module.dilation) and all(
            s <= k for s, k in zip(module.stride, module.kernel_size, strict=False)
        )
    return False


GradHook = Callable[[Tensor], None]
_F32 = torch.float32
_NONE: tuple[list[Tensor], list[int]] = ([], [])  # (no flags: never appended to)


def hook_gradient(t: Tensor, hook: GradHook) -> bool:
    """Run `hook(grad)` on the gradient flowing into non-leaf `t`; True when it is hooked.

    This is what `Tensor.register_hook` does (a hook dict on the tensor, bound once to the
    output of its autograd node), minus the removal handle: the hook goes away with the graph.
    Like any tensor hook it sees the gradient of `t` as it was made, also if `t` is later
    modified in place (an inplace ReLU)."""
    node = t.grad_fn
    if node is None:
        return False
    if type(t) is not Tensor:  # a tensor subclass: its own register_hook knows best
        t.register_hook(hook)
        return True
    hooks = t._backward_hooks
    if hooks is None:
        hooks = t._backward_hooks = OrderedDict()
        node._register_hook_dict(t)
    hooks[hook] = hook
    return True


class FlagRecorder:
    """Collects forward and backward flags. `paused` silences every hook (set while the monitor
    is off or re-running a step itself); `on_backward_end` runs once per backward pass while
    `end_callback` is set (when no optimizer step follows to read the backward flags at).

    The tensor seen last (the current one, `cur`) is kept with its version when seen, its
    flag (None while still owed), the modules whose entries wait for that flag, and whether a
    non-finite gradient flowing back into it is caught (`cur_checked`: a hook flags it, or the
    weight gradient of the module that made it covers it). Plain attributes: a module call
    allocates nothing but its flag."""

    def __init__(self, on_backward_end: Callable[[], None], check_backward: bool = True) -> None:
        self.paused = True
        self.check_backward = check_backward
        self.fflags: list[Tensor] = []
        self.fidx: list[int] = []
        self.bflags: list[Tensor] = []
        self.bidx: list[int] = []
        self.out_grads: list[Tensor | None] | None = None
        self._on_backward_end = on_backward_end
        self.end_callback = True
        self._queued = False
        self.cur: Tensor | None = None
        self.cur_version = 0
        self.cur_flag: Tensor | None = None
        self.cur_waiting: list[int] = []
        self.cur_checked = False
        self._grad_hooks: dict[int, GradHook] = {}
        self._root_hooks: dict[tuple[int, bool], GradHook] = {}

    def take_forward(self) -> tuple[list[Tensor], list[int]]:
        """The forward flags collected so far, and clear them."""
        if self.cur is not None:
            if self.cur_flag is None:
                self._resolve()
            self.cur = self.cur_flag = None
        if not self.fflags:
            return _NONE
        out = (self.fflags, self.fidx)
        self.fflags = []
        self.fidx = []
        return out

    def take_backward(self) -> tuple[list[Tensor], list[int]]:
        """The backward flags collected so far, and clear them."""
        if not self.bflags:
            return _NONE
        out = (self.bflags, self.bidx)
        self.bflags = []
        self.bidx = []
        return out

    def _current(self, t: Tensor, waiting: list[int], f: Tensor | None, checked: bool) -> None:
        """Make `t` the current tensor."""
        self.cur = t
        self.cur_version = t._version
        self.cur_waiting = waiting
        self.cur_flag = f
        self.cur_checked = checked

    # -------------------------------------------------------------- forward
    def forward_hook(self, i: int, module: nn.Module) -> Callable[..., None]:
        """The forward hook of submodule number `i`.

        The flag of the current tensor is computed as late as possible: a propagating module
        (Linear, Conv, norms) that takes it as its only input makes it unnecessary (its own
        output's flag covers both), a finite-preserving one (activations, dropout, pooling)
        reuses it for its output, a container returning it shares it. Backward likewise: the
        gradient flowing into the module's output gets a flag unless the module's weight
        gradient covers it, or the module passes a non-finite gradient on to its input
        (BACKWARD_PROPAGATING) and the gradient there is checked already. The module's gradient
        hook is made once, here."""
        covered = gradient_covered(module)
        check_backward = self.check_backward and not covered
        back_propagating = type(module) in BACKWARD_PROPAGATING
        preserving = isinstance(module, FINITE_PRESERVING)
        propagating = propagates(module)
        grad_hook = self._grad_hook(i) if check_backward else None

        def hook(module: nn.Module, args: Any, output: Any) -> None:
            if self.paused:
                return
            try:
                if not isinstance(output, Tensor):
                    self._record_many(i, output, check_backward)
                    return
                if not (output.is_floating_point() or output.is_complex()):
                    return
                cur = self.cur
                checked = covered
                # (a tensor modified in place since it was seen is flagged as it is now)
                if cur is not None and cur._version == self.cur_version:
                    if output is cur:  # a container passing a child's output on
                        if self.cur_flag is None:
                            self.cur_waiting.append(i)
                        else:
                            self.fflags.append(self.cur_flag)
                            self.fidx.append(i)
                        return
                    if len(args) == 1 and args[0] is cur:
                        if back_propagating and self.cur_checked:
                            checked = True  # its input's gradient check covers it
                        elif check_backward and output.requires_grad:
                            checked = hook_gradient(output, grad_hook)  # type: ignore[arg-type]
                        f = self.cur_flag
                        if preserving:  # finite in, finite out: reuse the input's flag
                            if f is None:
                                f = self._resolve()
                            self.fflags.append(f)
                            self.fidx.append(i)
                            waiting: list[int] = []
                        elif propagating:  # non-finite in, non-finite out: one flag
                            if f is None:
                                waiting = self.cur_waiting
                                waiting.append(i)
                            else:
                                waiting, f = [i], None
                        else:
                            if f is None:
                                self._resolve()
                            waiting, f = [i], None
                        self.cur, self.cur_version = output, output._version
                        self.cur_waiting, self.cur_flag, self.cur_checked = waiting, f, checked
                        return
                if cur is not None and self.cur_flag is None:
                    self._resolve()
                if check_backward and output.requires_grad:
                    checked = hook_gradient(output, grad_hook)  # type: ignore[arg-type]
                self.cur, self.cur_version = output, output._version
                self.cur_waiting, self.cur_flag, self.cur_checked = [i], None, checked
            except Exception:  # a tensor type the flag cannot reduce: never break training
                return

        return hook

    def _record_many(self, i: int, output: Any, check_backward: bool) -> None:
        """A module output that is not one tensor: flag each tensor inside it now."""
        if self.cur is not None and self.cur_flag is None:
            self._resolve()
        first = None
        for t in flat_tensors(output):
            f = flag(t)
            self.fflags.append(f)
            self.fidx.append(i)
            checked = check_backward and t.requires_grad and self.watch_grad(i, t)
            if first is None:
                first = (t, f, checked)
        if first is not None:  # e.g. attention's (output, weights): output feeds dropout
            self._current(first[0], [], first[1], first[2])

    def _resolve(self) -> Tensor:
        """Compute the current tensor's owed flag (one reduction), give it to the entries
        waiting for it, and return it."""
        t: Tensor = self.cur  # type: ignore[assignment]
        f = self.cur_flag = t.detach().sum() if t.dtype is _F32 else flag(t)
        fflags, fidx = self.fflags, self.fidx
        for j in self.cur_waiting:
            fflags.append(f)
            fidx.append(j)
        self.cur_waiting = []
        return f

    def root_outputs(self, output: Any, flag_outputs: bool = True) -> list[Tensor]:
        """Flag the top-level module's outputs (unless `flag_outputs` is False); hook their
        gradients, keeping them (the gradient of the loss w.r.t. the model output) until the
        step. The gradient of an output whose gradient is checked already (made by a Linear
        head, say) needs no flag here."""
        if type(output) is Tensor and output is self.cur and output._version == self.cur_version:
            return self._root_is_current(output)
        plain = type(output) is Tensor and output.is_floating_point()
        outs = [output] if plain else flat_tensors(output)
        if not flag_outputs:  # (nor their gradients: what reaches the weights is checked)
            if self.check_backward:
                self._hook_root_grads(outs, [False] * len(outs))
            return outs
        cur = self.cur
        checked_out = None
        for t in outs:
            try:
                if t is cur and self.cur_version == t._version:
                    if self.cur_flag is None:
                        self.cur_waiting.append(0)
                    else:
                        self.fflags.append(self.cur_flag)
                        self.fidx.append(0)
                    if self.cur_checked:
                        checked_out = t
                else:
                    self.fflags.append(flag(t))
                    self.fidx.append(0)
            except Exception:
                continue
        if cur is not None and self.cur_flag is None:
            self._resolve()
        if self.check_backward:
            self._hook_root_grads(outs, [t is not checked_out for t in outs])
        return outs

    def keep_root_grad(self, t: Tensor) -> None:
        """`root_outputs(t, flag_outputs=False)` for a model returning one tensor."""
        self.out_grads = [None]
        hook = self._root_hooks.get((0, False))
        if hook is None:
            hook = self._root_hooks[0, False] = self._make_root_hook(0, False)
        hook_gradient(t, hook)

    def flag_outputs(self, output: Any) -> None:
        """Flag the top-level module's outputs now (a training forward no backward followed)."""
        for t in flat_tensors(output):
            self.fflags.append(flag(t))
            self.fidx.append(0)

    def _hook_root_grads(self, outs: list[Tensor], flagged: list[bool]) -> None:
        """Keep the gradients flowing into the model outputs `outs` until the step, each
        flagged where `flagged` says."""
        self.out_grads = [None] * len(outs)
        hooks = self._root_hooks
        for k, t in enumerate(outs):
            key = (k, flagged[k])
            hook = hooks.get(key)
            if hook is None:
                hook = hooks[key] = self._make_root_hook(*key)
            hook_gradient(t, hook)

    def _root_is_current(self, t: Tensor) -> list[Tensor]:
        """`root_outputs` for the common case: the model returns the tensor its last module
        made (a Linear head's logits), whose flag is computed here, once."""
        f = self.cur_flag
        if f is None:
            self.cur_waiting.append(0)
            self._resolve()
        else:
            self.fflags.append(f)
            self.fidx.append(0)
        if self.check_backward:
            self.out_grads = [None]
            key = (0, not self.cur_checked)
            hook = self._root_hooks.get(key)
            if hook is None:
                hook = self._root_hooks[key] = self._make_root_hook(*key)
            hook_gradient(t, hook)
        return [t]

    # -------------------------------------------------------------- backward
    def _queue(self) -> None:
        if not self._queued:
            self._queued = True
            queue_end_of_backward(self._on_backward_end)

    def watch_grad(self, i: int, t: Tensor) -> bool:
        """Flag the gradient that will flow back into `t`, an output of module `i`; True when
        it is hooked."""
        return hook_gradient(t, self._grad_hook(i))

    def _grad_hook(self, i: int) -> GradHook:
        """The (cached) hook flagging the gradient flowing into an output of module `i`."""
        hook = self._grad_hooks.get(i)
        if hook is None:
            hook = self._grad_hooks[i] = self._make_grad_hook(i)
        return hook

    def _make_grad_hook(self, i: int) -> GradHook:
        def hook(grad: Tensor) -> None:
            if self.paused or grad is None:
                return
            if grad.dtype is _F32:
                self.bflags.append(grad.sum())
                self.bidx.append(i)
            elif is_checked(grad):
                self.bflags.append(flag(grad))
                self.bidx.append(i)
            if self.end_callback and not self._queued:
                self._queue()

        return hook

    def _make_root_hook(self, k: int, flagged: bool) -> GradHook:
        def hook(grad: Tensor) -> None:
            if self.paused or grad is None:
                return
            store = self.out_grads
            if store is not None and k < len(store):
                store[k] = grad  # the gradient of the loss w.r.t. model output k
            if flagged and (grad.dtype is _F32 or is_checked(grad)):
                self.bflags.append(grad.sum() if grad.dtype is _F32 else flag(grad))
                self.bidx.append(0)
            if self.end_callback and not self._queued:
                self._queue()

        return hook
