"""Re-running the loss on the failure path, to name the op and source line where a non-finite
loss (or a non-finite gradient sent back by a finite loss) began.

The loss is re-computed from the step's values with the model's outputs as fresh leaves (the
model is not run again unless the loss expression calls it), under per-op checks in its forward
and, with anomaly-mode tracebacks, in its backward. Three ways to know how the loss was made:
an explicit `loss_fn(output)`, the criterion module's last call (`criterion=`), or the source
of the statement that called `backward()`: the expression assigned to the tensor `backward()`
was called on, evaluated again in that frame (still running when the monitor checks the step).
Nothing here runs on the fast path."""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import linecache
import sys
import types
import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

#: Calls in a loss expression that must not be run twice (they change state).
_EFFECTS = frozenset(
    {
        "backward",
        "step",
        "zero_grad",
        "append",
        "extend",
        "pop",
        "update",
        "next",
        "print",
        "write",
        "save",
        "put",
        "send",
        "enqueue",
        "dequeue",
        "copy_",
        "add_",
        "fill_",
        "zero_",
    }
)


def as_leaves(obj: Any, depth: int = 0, made: dict[int, Tensor] | None = None) -> Any:
    """`obj` with every tensor that has an autograd history replaced by a detached copy that
    requires grad (a fresh leaf), inside tuples, lists, dicts and dataclasses; `made`, when
    given, maps the id of each tensor replaced to its leaf."""
    if isinstance(obj, Tensor):
        if obj.grad_fn is not None:
            leaf = obj.detach().requires_grad_(obj.is_floating_point() or obj.is_complex())
            if made is not None:
                made[id(obj)] = leaf
            return leaf
        return obj
    if depth > 6:
        return obj
    if isinstance(obj, dict):
        try:
            return type(obj)((k, as_leaves(v, depth + 1, made)) for k, v in obj.items())
        except TypeError:
            return {k: as_leaves(v, depth + 1, made) for k, v in obj.items()}
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(as_leaves(v, depth + 1, made) for v in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(as_leaves(v, depth + 1, made) for v in obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        try:
            changes = {
                f.name: as_leaves(getattr(obj, f.name), depth + 1, made)
                for f in dataclasses.fields(obj)
                if f.init
            }
            return dataclasses.replace(obj, **changes)
        except (TypeError, ValueError):
            return obj
    return obj


def _targets(*objs: Any) -> tuple[Tensor, ...]:
    """The tensors among the loss's inputs that need no gradient (its targets)."""
    from numlint.monitor.stats import iter_tensors

    out = []
    for obj in objs:
        for _, t in iter_tensors(obj, "x"):
            if not t.requires_grad and t.dim() > 0:
                out.append(t)
    return tuple(out)


@dataclasses.dataclass
class LossRun:
    """How to compute the step's loss again: `run()` returns it (from fresh leaves), and
    `targets` are the tensors it read that need no gradient (for the snapshot)."""

    run: Callable[[], Any]
    targets: tuple[Tensor, ...] = ()
    how: str = ""
    #: id of each tensor with an autograd history the last run read -> the leaf it read instead
    leaves: dict[int, Tensor] = dataclasses.field(default_factory=dict)


def from_function(loss_fn: Callable[[Any], Any], output: Any) -> LossRun:
    """The loss as `loss_fn(output)` (stress, or `watch(..., loss_fn=)`)."""
    made: dict[int, Tensor] = {}
    return LossRun(
        lambda: loss_fn(as_leaves(output, 0, made)), _closure_targets(loss_fn), "loss_fn", made
    )


def from_call(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> LossRun:
    """The loss as the criterion's last call."""
    made: dict[int, Tensor] = {}
    return LossRun(
        lambda: fn(*as_leaves(args, 0, made), **as_leaves(kwargs, 0, made)),
        _targets(args[1:], kwargs),
        "criterion",
        made,
    )


def _closure_targets(fn: Any) -> tuple[Tensor, ...]:
    cells = getattr(fn, "__closure__", None) or ()
    values = []
    for c in cells:
        try:
            values.append(c.cell_contents)
        except ValueError:
            continue
    return _targets(values)


def line_at(code: types.CodeType, offset: int) -> int:
    """The source line of the instruction at bytecode `offset` in `code` (a frame's `f_lasti`,
    kept instead of its `f_lineno`, which takes a walk of the line table to compute)."""
    for start, end, line in code.co_lines():
        if start <= offset < end and line is not None:
            return line
    return code.co_firstlineno


def find_frame(code: types.CodeType) -> types.FrameType | None:
    """The running frame of `code` on this thread's stack, innermost first."""
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_code is code:
            return frame
        frame = frame.f_back
    return None


def from_frame(code: types.CodeType, line: int) -> LossRun | None:
    """The loss as the expression the loop assigned to the tensor it called `backward()` on at
    `code`'s `line`, evaluated again in that frame (which must still be running); None when the
    statement cannot be found, read or safely run again."""
    frame = find_frame(code)
    if frame is None:
        return None
    expr = loss_expression(code.co_filename, line, code.co_firstlineno)
    if expr is None:
        return None
    try:
        compiled = compile(ast.Expression(expr), code.co_filename, "eval")
    except (SyntaxError, ValueError, TypeError):
        return None
    names = {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}
    local = frame.f_locals
    values = {k: local[k] for k in names if k in local}
    glob = frame.f_globals
    made: dict[int, Tensor] = {}
    patched = {k: as_leaves(v, 0, made) for k, v in values.items()}

    def run() -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return eval(compiled, glob, dict(patched))  # noqa: S307 (the user's own loop)

    return LossRun(run, _targets(list(values.values())), f"line {expr.lineno}", made)


def loss_expression(path: str, line: int, first: int = 1) -> ast.expr | None:
    """The expression that made the tensor `backward()` is called on at `path:line`: the
    receiver itself when it is a computation, else the last assignment to its name before that
    line in the same function; None when it is not plain or could change state if run again."""
    source = "".join(linecache.getlines(path))
    if not source:
        return None
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    scope: ast.AST = tree
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            end = node.end_lineno or node.lineno
            if node.lineno <= line <= end and node.lineno >= getattr(scope, "lineno", 0):
                scope = node
    receiver = None
    for node in ast.walk(scope):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "backward"
            and node.lineno <= line <= (node.end_lineno or node.lineno)
        ):
            receiver = node.func.value
            break
    if receiver is None:
        return None
    expr = _unwrap(receiver, scope, line)
    if expr is None or _has_effects(expr):
        return None
    return expr


def _unwrap(expr: ast.expr, scope: ast.AST, line: int, depth: int = 0) -> ast.expr | None:
    if depth > 4:
        return None
    if isinstance(expr, ast.Name):
        value = _assigned(scope, expr.id, line)
        return _unwrap(value, scope, value.lineno, depth + 1) if value is not None else None
    if (  # scaler.scale(loss): the loss itself
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Attribute)
        and expr.func.attr == "scale"
        and len(expr.args) == 1
    ):
        return _unwrap(expr.args[0], scope, line, depth + 1)
    if isinstance(expr, ast.BinOp) and isinstance(expr.left, ast.Name):  # loss / accumulation
        return _unwrap(expr.left, scope, line, depth + 1)
    return expr


def _assigned(scope: ast.AST, name: str, line: int) -> ast.expr | None:
    best: tuple[int, ast.expr] | None = None
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign) and node.value is not None:
            targets = node.targets
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets = [node.target]
        else:
            continue
        if node.lineno >= line:
            continue
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            if best is None or node.lineno > best[0]:
                best = (node.lineno, node.value)
    return best[1] if best else None


def _has_effects(expr: ast.expr) -> bool:
    for node in ast.walk(expr):
        if isinstance(node, (ast.NamedExpr, ast.Lambda, ast.Await, ast.Yield, ast.YieldFrom)):
            return True
        if isinstance(node, ast.Call):
            f = node.func
            name = (
                f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            )
            if name in _EFFECTS:
                return True
    return False


def locate(loss_run: LossRun, model: Any = None) -> dict[str, Any] | None:
    """Run the loss again under per-op checks (forward, then backward with anomaly-mode
    tracebacks): the first op whose output holds a NaN/Inf its inputs did not, as {"op", "kind",
    "phase" ("loss" or "backward"), "node", "dtype", "source", "code", "loss_finite"}; None when
    the loss ran clean again or could not be run."""
    from numlint.monitor.locate import preserved_state
    from numlint.monitor.opcheck import OpChecker

    checker = OpChecker([])
    checker.phase = "loss"
    loss_finite = None
    saved = torch.get_rng_state()
    keep = preserved_state(model, None) if model is not None else contextlib.nullcontext()
    try:
        with keep, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # anomaly mode for this one re-run only: its tracebacks name the backward's line
            with torch.autograd.set_detect_anomaly(True, check_nan=False):  # noqa: NUM507
                with torch.enable_grad():
                    with checker:
                        loss = loss_run.run()
                    tensors = [t for t in _flat(loss) if t.is_floating_point()]
                    if tensors:
                        total = torch.stack([t.float().sum() for t in tensors]).sum()
                        loss_finite = bool(torch.isfinite(total))
                        leaves = _leaves(total)
                        if checker.found is None and leaves:
                            checker.phase = "backward"
                            with checker:  # (gradients returned, never added to any .grad)
                                torch.autograd.grad(total, leaves, allow_unused=True)
    except Exception:
        pass
    finally:
        torch.set_rng_state(saved)
    found = checker.found
    if found is None:
        return None
    where = found["where"]
    return {
        "op": found["op"],
        "kind": found["kind"],
        "phase": found["phase"],
        "node": found["node"],
        "dtype": found["output"].get("dtype"),
        "source": f"{where[0]}:{where[1]}" if where else None,
        "code": (linecache.getline(*where).strip() or None) if where else None,
        "loss_finite": loss_finite,
    }


def output_grads(
    loss_run: LossRun,
    outputs: list[Tensor],
    loss: Tensor | None,
    model: Any = None,
    call: tuple[tuple[Any, ...], dict[str, Any]] | None = None,
    rng: Any = None,
) -> list[Tensor | None] | None:
    """The gradient of the step's loss with respect to each of the model's `outputs`, from the
    loss computed again (the failure path's stand-in for the gradient a hook would have kept):
    with respect to the leaf that replaced each output, or, when the loss calls `model`
    itself, to the output of that call, made from the recorded inputs `call` (args, kwargs)
    with the step's RNG state `rng` (the model's buffers put back after), if it equals the
    recorded output. None when neither is there, or when the loss computed again is not
    `loss`, the one backward() was called on (the expression is not all of the loss, or reads
    values the loop has changed since)."""
    from numlint.monitor.locate import preserved_state
    from numlint.monitor.stats import flat_tensors

    rerun: list[Any] = []
    handles = []
    if model is not None:
        if call is not None:  # (the loop may have moved on to its next batch already)

            def same_inputs(m: Any, args: Any, kwargs: Any) -> Any:
                return call if not rerun else None

            handles.append(model.register_forward_pre_hook(same_inputs, with_kwargs=True))
        handles.append(model.register_forward_hook(lambda m, a, out: rerun.append(out)))
    keep = preserved_state(model, rng) if model is not None else contextlib.nullcontext()
    try:
        with keep, warnings.catch_warnings(), torch.enable_grad():
            warnings.simplefilter("ignore")
            loss = loss_run.run()
            tensors = [t for t in _flat(loss) if t.is_floating_point() and t.requires_grad]
            if not tensors:
                return None
            total = torch.stack([t.float().sum() for t in tensors]).sum()
            if loss is None or not _same_value(total, loss):
                return None
            again = flat_tensors(rerun[0]) if len(rerun) == 1 else []
            wrt: list[Tensor | None] = []
            for k, out in enumerate(outputs):
                t = loss_run.leaves.get(id(out))
                if t is None and k < len(again) and _same(again[k], out):
                    t = again[k]
                wrt.append(t if t is not None and t.requires_grad else None)
            asked = [t for t in wrt if t is not None]
            if not asked:
                return None
            found = iter(torch.autograd.grad(total, asked, allow_unused=True))
            return [next(found) if t is not None else None for t in wrt]
    except Exception:
        return None
    finally:
        for h in handles:
            h.remove()


def _same(a: Tensor, b: Tensor) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and bool(torch.equal(a.detach(), b.detach()))


def _same_value(a: Tensor, b: Tensor) -> bool:
    """Two one-element tensors hold the same value (NaN the same as NaN)."""
    if b.numel() != 1:
        return False
    x, y = float(a.detach().float()), float(b.detach().float())
    return x == y or (x != x and y != y)


def _leaves(t: Tensor) -> list[Tensor]:
    """The leaf tensors `t`'s autograd graph accumulates gradients into."""
    if t.grad_fn is None:
        return []
    out: dict[int, Tensor] = {}
    queue, seen = [t.grad_fn], set()
    while queue:
        node = queue.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        variable = getattr(node, "variable", None)
        if isinstance(variable, Tensor):
            out[id(variable)] = variable
        queue.extend(n for n, _ in node.next_functions)
    return list(out.values())


def _flat(obj: Any) -> list[Tensor]:
    from numlint.monitor.stats import iter_tensors

    return [t for _, t in iter_tensors(obj, "loss")]
