"""The ordered events of a training step: backward, unscale_, clip, step, update, zero_grad.

Rules call `tracker(ctx).note(call)` from `visit_Call` (name resolution needs the traversal's
environment) and read `tracker(ctx).sequences()` from `leave_Module`. A sequence is the events
of one function (or of the module's top-level code) in statement order, through `with`
blocks, loops, `try` and `if`/`else` branches, with calls of `self.method()` of the same class
and of functions of the same module spliced in where they are called. Each event remembers
which branch of every enclosing `if` it sits in, so events of an `if` and its `else` (or code
after an `if` whose body returns) never count as following each other.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import libcst as cst

from numlint.analysis.context import Context
from numlint.analysis.semantics import dotted_name, keyword, positional
from numlint.analysis.summaries import NOT_OPTIMIZERS, effects
from numlint.rule import Rule
from numlint.tree import children, descendants, walk

CLIP_FUNCTIONS = frozenset(
    f"torch.nn.utils.{mod}{name}"
    for mod in ("", "clip_grad.")
    for name in ("clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "clip_grads_with_norm_")
)
GRAD_SCALERS = frozenset(
    {
        "torch.GradScaler",
        "torch.amp.GradScaler",
        "torch.amp.grad_scaler.GradScaler",
        "torch.cuda.amp.GradScaler",
        "torch.cuda.amp.grad_scaler.GradScaler",
        "torch.cpu.amp.GradScaler",
        "torch.distributed.fsdp.sharded_grad_scaler.ShardedGradScaler",
    }
)
_BACKWARD_FUNCTIONS = frozenset({"torch.autograd.backward"})
_STEP_FUNCTIONS = frozenset({"torch_xla.core.xla_model.optimizer_step"})

BACKWARD = "backward"
SCALED_BACKWARD = "scaled-backward"
UNSCALE = "unscale"
CLIP = "clip"
STEP = "step"
SCALER_STEP = "scaler-step"
UPDATE = "update"
ZERO_GRAD = "zero-grad"
BACKWARDS = (BACKWARD, SCALED_BACKWARD)
STEPS = (STEP, SCALER_STEP)

_MAX_DEPTH = 2  # how deep calls of helpers are spliced in
#: Optimizer classes outside torch.optim (apex, bitsandbytes, timm, transformers...).
_OPTIMIZER_NAME = re.compile(
    r"(Adam|SGD|LAMB|Lamb|Lion|Adafactor|RMSprop|Adagrad|Adadelta|LBFGS|Sophia|Shampoo|"
    r"Muon|Novograd|LARS|Lars|Ranger|Prodigy|Adan|Optimizer|ZeroRedundancy)"
)
_MAX_EVENTS = 4000  # per sequence: beyond this a function is not analysed further

Path = tuple[tuple[int | str, int], ...]


@dataclass(frozen=True)
class _Raw:
    """A call as classified during the traversal, before its place in a sequence is known."""

    kind: str  # an event kind, "step?" / "update?" (decided once scalers are known) or "call"
    receiver: str | None = None
    arg: str | None = None
    callee: str | None = None  # "self.name" or "name": a helper to splice in
    #: "disabled": the scaler was built with `enabled=False`; "local": the scaler is a
    #: GradScaler constructed in the same function.
    flags: frozenset[str] = frozenset()
    #: For a call of a function imported from another file: the events it runs.
    effects: tuple[tuple[str, str | None, str | None], ...] = ()


@dataclass(frozen=True)
class Event:
    """One training-step event at its place in a sequence."""

    kind: str
    call: cst.Call
    #: Source text of the scaler (unscale_, scaler step, update, scaled backward), the
    #: optimizer (step) or the zeroed object (zero_grad).
    receiver: str | None
    #: The optimizer passed to `scaler.unscale_(opt)` / `scaler.step(opt)`.
    arg: str | None
    path: Path
    loops: tuple[int, ...]
    function: cst.CSTNode
    stmt: cst.BaseStatement | None
    indent: str | None
    flags: frozenset[str] = frozenset()

    @property
    def optimizer(self) -> str | None:
        return self.arg if self.kind in (SCALER_STEP, UNSCALE) else self.receiver

    def on_every_path_to(self, other: Event) -> bool:
        """True when every branch this event sits in also holds `other`: whenever `other`
        runs, this one ran too (not `if bad: reset()` before it, nor an `except` handler)."""
        return set(self.path) <= set(other.path)

    def compatible(self, other: Event) -> bool:
        """False when the two sit in different branches of one `if`: no path runs both."""
        mine = dict(self.path)
        return all(mine.get(k, v) == v for k, v in other.path)


class StepTracker:
    """Per-file collection of training-step calls and the sequences built from them."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.raw: dict[int, _Raw] = {}
        self.seen: set[int] = set()
        self.scalers: set[str] = set()
        #: Scalers whose GradScaler constructor is visible in this file.
        self.constructed: set[str] = set()
        #: Receivers of `.update()` calls anywhere in the file.
        self.updated: set[str] = set()
        #: The loops met while building sequences, by id (Event.loops holds the ids).
        self.loop_nodes: dict[int, cst.For | cst.While] = {}
        self._sequences: list[list[Event]] | None = None
        #: The class of each function, by id (once the sequences are built).
        self.owner: dict[int, cst.ClassDef | None] = {}

    # ---- during the traversal ----

    def note(self, call: cst.Call) -> None:
        """Classify a call with the name environment at its position (idempotent)."""
        if id(call) in self.seen:
            return
        self.seen.add(id(call))
        raw = self._classify(call)
        if raw is not None:
            self.raw[id(call)] = raw

    def _classify(self, call: cst.Call) -> _Raw | None:
        ctx = self.ctx
        func = call.func
        qual = ctx.qualname(func)
        if qual is not None:
            if qual in CLIP_FUNCTIONS:
                return _Raw(CLIP)
            if qual in _BACKWARD_FUNCTIONS:
                return _Raw(BACKWARD)
            if qual in _STEP_FUNCTIONS and (opt := positional(call, 0, "optimizer")):
                return _Raw(STEP, receiver=ctx.code(opt))
            if isinstance(func, cst.Name) and not qual.startswith(("torch.", "numpy.")):
                # a helper imported from another file of the project: what it runs
                return _Raw(
                    "call", callee=func.value, effects=tuple(effects(ctx, func.value, call))
                )
            return None
        if isinstance(func, cst.Name):
            found = () if ctx.lookup(func.value) else tuple(effects(ctx, func.value, call))
            return _Raw("call", callee=func.value, effects=found)
        if not isinstance(func, cst.Attribute):
            return None
        name, recv = func.attr.value, func.value
        text = ctx.code(recv)
        if name == "backward":
            inner = ctx.deref(ctx.value(recv)).node
            if (
                isinstance(inner, cst.Call)
                and isinstance(inner.func, cst.Attribute)
                and inner.func.attr.value == "scale"
                and len(inner.args) == 1
            ):
                scaler = inner.func.value
                scaler_text = ctx.code(scaler)
                flags = self._scaler(scaler, scaler_text)
                return _Raw(SCALED_BACKWARD, receiver=scaler_text, flags=flags)
            return _Raw(BACKWARD)
        if name == "manual_backward":
            return _Raw(BACKWARD)
        if name == "unscale_" and len(call.args) == 1:
            self._scaler(recv, text)
            return _Raw(UNSCALE, receiver=text, arg=ctx.code(call.args[0].value))
        if "unscale" in name.lower():
            return _Raw(UNSCALE, receiver=text)  # a wrapper that unscales
        if isinstance(recv, cst.Name) and recv.value == "self":
            return _Raw("call", callee=f"self.{name}")
        if name == "step" and len(call.args) <= 1 and self._statement_shaped():
            if self._is_scheduler(recv, text):
                return None
            flags = self._scaler_if_constructed(recv, text)
            arg = ctx.code(call.args[0].value) if call.args and not call.args[0].keyword else None
            return _Raw("step?", receiver=text, arg=arg, flags=flags)
        if name == "update" and len(call.args) <= 1:
            self._scaler_if_constructed(recv, text)
            self.updated.add(text)
            return _Raw("update?", receiver=text)
        if name == "zero_grad":
            return _Raw(ZERO_GRAD, receiver=text)
        return None

    def _statement_shaped(self) -> bool:
        """`opt.step()` as a statement or `loss = opt.step(closure)`; not `obs, r = env.step(a)`."""
        parent = self.ctx.parent
        if isinstance(parent, (cst.Expr, cst.Return)):
            return True
        if isinstance(parent, cst.Assign):
            return all(isinstance(t.target, (cst.Name, cst.Attribute)) for t in parent.targets)
        return False

    def _is_scheduler(self, recv: cst.BaseExpression, text: str) -> bool:
        """Not an optimizer: a learning-rate scheduler, a checkpoint manager, an EMA, a
        progress bar... (by name), or an object built by a class that is not an optimizer
        (`CheckpointManager(...)`; `torch.optim.*`, `*Adam*`, `*Optimizer*` are)."""
        lowered = text.rsplit(".", 1)[-1].lower()
        if any(word in lowered for word in NOT_OPTIMIZERS) and "optim" not in lowered:
            return True
        target = self.ctx.deref(self.ctx.value(recv))
        if isinstance(target.node, cst.Call):
            ctor = self.ctx.qualname(target.node.func, target.env) or ""
            if ctor in GRAD_SCALERS:
                return False
            if "sched" in ctor.lower():
                return True
            name = (ctor or self.ctx.code(target.node.func)).rsplit(".", 1)[-1]
            if not name[:1].isupper():
                return False  # a factory function: whatever it returns may be an optimizer
            return "optim" not in name.lower() and not _OPTIMIZER_NAME.search(name)
        return False

    def _scaler(self, recv: cst.BaseExpression, text: str) -> frozenset[str]:
        self.scalers.add(text)
        return self._scaler_if_constructed(recv, text)

    def _scaler_if_constructed(self, recv: cst.BaseExpression, text: str) -> frozenset[str]:
        """Record a receiver built by a GradScaler constructor; return flags about it."""
        ctx = self.ctx
        if isinstance(recv, cst.Name) and _annotated_scaler(ctx, recv.value):
            self.scalers.add(text)  # `grad_scaler: Optional[torch.cuda.amp.GradScaler]`
            return frozenset()
        target = ctx.deref(ctx.value(recv))
        node = target.node
        if (
            not isinstance(node, cst.Call)
            or ctx.qualname(node.func, target.env) not in GRAD_SCALERS
        ):
            return frozenset()
        self.scalers.add(text)
        self.constructed.add(text)
        flags = set()
        enabled = keyword(node, "enabled")
        if isinstance(enabled, cst.Name) and enabled.value == "False":
            flags.add("disabled")
        if isinstance(recv, cst.Name) and ctx.function is not None and recv.value in ctx.env:
            flags.add("local")
        return frozenset(flags)

    # ---- after the traversal ----

    def sequences(self) -> list[list[Event]]:
        """One event sequence per function and one for the module's top-level code."""
        if self._sequences is None:
            builder = _Builder(self)
            self._sequences = builder.build()
            self.owner = builder.owner
        return self._sequences

    def resolve(self, raw: _Raw) -> tuple[str, str | None, str | None] | None:
        """(kind, receiver, arg) of a classified call once every scaler of the file is known."""
        if raw.kind == "step?":
            if raw.receiver in self.scalers:
                return SCALER_STEP, raw.receiver, raw.arg
            return STEP, raw.receiver, None
        if raw.kind == "update?":
            return (UPDATE, raw.receiver, None) if raw.receiver in self.scalers else None
        return raw.kind, raw.receiver, raw.arg


class StepRule(Rule):
    """Base of the rules about the order of a training step: calls are noted during the
    traversal, and `check` reads each event sequence once the file is done. A rule defines
    `check(tracker, seq)` yielding (event, detail) and, to say more than its MESSAGE,
    `found(event, detail)`; an event is reported once however many sequences hold it."""

    CHUNK = "module"

    def visit_Call(self, node: cst.Call) -> None:
        tracker(self.ctx).note(node)

    def leave_Module(self, node: cst.Module) -> None:
        t = tracker(self.ctx)
        seen: set[int] = set()
        for seq in t.sequences():
            for event, detail in self.check(t, seq):
                if id(event.call) not in seen:
                    seen.add(id(event.call))
                    self.found(event, detail)

    def check(self, t: StepTracker, seq: list[Event]) -> Iterator[tuple[Event, Any]]:
        raise NotImplementedError

    def found(self, event: Event, detail: Any) -> None:
        self.report(event.call)


def tracker(ctx: Context) -> StepTracker:
    """The file's StepTracker, shared by every rule that asks for it."""
    found = ctx.shared.get("steps")
    if found is None:
        found = ctx.shared["steps"] = StepTracker(ctx)
    return found


# ---- building sequences ----

_Function = cst.FunctionDef


class _Builder:
    def __init__(self, tracker: StepTracker) -> None:
        self.t = tracker
        self.module = tracker.ctx.module
        self.functions: list[tuple[_Function, str | None]] = []
        self.owner: dict[int, cst.ClassDef | None] = {}
        self.methods: dict[int, dict[str, _Function]] = {}
        self.module_functions: dict[str, _Function] = {}
        self.body_indent: dict[int, str | None] = {}
        self._memo: dict[tuple[int, int], list[Event]] = {}
        self._collect(self.module.body, "", None, top=True)

    def build(self) -> list[list[Event]]:
        out = [self._events(self.module, self.module.body, "", 0)]
        for func, _ in self.functions:
            out.append(self._function_events(func, 0))
        return [seq for seq in out if any(e.kind != BACKWARD for e in seq)]

    def _collect(
        self, stmts: Sequence[cst.CSTNode], indent: str | None, cls: cst.ClassDef | None, top: bool
    ) -> None:
        for stmt in stmts:
            if isinstance(stmt, cst.FunctionDef):
                body_indent = self._indent(stmt.body, indent)
                self.functions.append((stmt, body_indent))
                self.body_indent[id(stmt)] = body_indent
                self.owner[id(stmt)] = cls
                if cls is not None:
                    self.methods.setdefault(id(cls), {})[stmt.name.value] = stmt
                elif top:
                    self.module_functions[stmt.name.value] = stmt
                self._collect(_statements(stmt.body), body_indent, None, top=False)
            elif isinstance(stmt, cst.ClassDef):
                self._collect(_statements(stmt.body), self._indent(stmt.body, indent), stmt, top)
            else:
                for block in _blocks(stmt):
                    self._collect(_statements(block), self._indent(block, indent), cls, top)

    def _indent(self, block: cst.CSTNode, outer: str | None) -> str | None:
        if outer is None or not isinstance(block, cst.IndentedBlock):
            return None
        return outer + (block.indent if block.indent is not None else self.module.default_indent)

    def _function_events(self, func: _Function, depth: int) -> list[Event]:
        key = (id(func), depth)
        if key not in self._memo:
            self._memo[key] = []  # breaks recursion
            indent = self.body_indent.get(id(func))
            self._memo[key] = self._events(func, _statements(func.body), indent, depth)
        return self._memo[key]

    def _events(
        self, function: cst.CSTNode, stmts: Sequence[cst.CSTNode], indent: str | None, depth: int
    ) -> list[Event]:
        out: list[Event] = []
        self._walk(function, stmts, indent, (), (), depth, out)
        return out

    def _walk(
        self,
        function: cst.CSTNode,
        stmts: Sequence[cst.CSTNode],
        indent: str | None,
        path: Path,
        loops: tuple[int, ...],
        depth: int,
        out: list[Event],
    ) -> None:
        for stmt in stmts:
            if len(out) > _MAX_EVENTS:
                return
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                continue
            if isinstance(stmt, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
                for small in stmt.body:
                    self._calls(function, small, stmt, indent, path, loops, depth, out)
                continue
            if isinstance(stmt, cst.If):
                path = self._walk_if(function, stmt, indent, path, loops, depth, out)
                continue
            if isinstance(stmt, (cst.For, cst.While)):
                header = stmt.iter if isinstance(stmt, cst.For) else stmt.test
                self._calls(function, header, None, None, path, loops, depth, out)
                inner = loops + (id(stmt),)
                self.t.loop_nodes[id(stmt)] = stmt
                self._walk_block(function, stmt.body, indent, path, inner, depth, out)
                if stmt.orelse is not None:
                    self._walk_block(function, stmt.orelse.body, indent, path, loops, depth, out)
                continue
            if isinstance(stmt, cst.With):
                for item in stmt.items:
                    self._calls(function, item.item, None, None, path, loops, depth, out)
                self._walk_block(function, stmt.body, indent, path, loops, depth, out)
                continue
            if isinstance(stmt, cst.Match):
                self._calls(function, stmt.subject, None, None, path, loops, depth, out)
                for i, case in enumerate(stmt.cases):
                    branch = path + ((id(stmt), i),)
                    self._walk_block(function, case.body, indent, branch, loops, depth, out)
                continue
            if isinstance(stmt, (cst.Try, cst.TryStar)):
                # the body, `else` and `finally` run in order; each handler is a branch
                self._walk_block(function, stmt.body, indent, path, loops, depth, out)
                for handler in stmt.handlers:
                    branch = path + ((id(handler), 0),)
                    self._walk_block(function, handler.body, indent, branch, loops, depth, out)
                for block in (stmt.orelse, stmt.finalbody):
                    if block is not None:
                        self._walk_block(function, block.body, indent, path, loops, depth, out)
                continue
            for block in _blocks(stmt):
                self._walk_block(function, block, indent, path, loops, depth, out)

    def _walk_if(
        self,
        function: cst.CSTNode,
        stmt: cst.If,
        indent: str | None,
        path: Path,
        loops: tuple[int, ...],
        depth: int,
        out: list[Event],
    ) -> Path:
        """Walk an if/elif/else; return the path for the statements that follow it."""
        self._calls(function, stmt.test, None, None, path, loops, depth, out)
        key, flipped = _condition(stmt.test)
        if key is None:
            key = id(stmt)
        taken, other_branch = (1, 0) if flipped else (0, 1)
        self._walk_block(function, stmt.body, indent, path + ((key, taken),), loops, depth, out)
        orelse = stmt.orelse
        other = path + ((key, other_branch),)
        if isinstance(orelse, cst.If):
            self._walk_if(function, orelse, indent, other, loops, depth, out)
        elif isinstance(orelse, cst.Else):
            self._walk_block(function, orelse.body, indent, other, loops, depth, out)
        if _terminates(stmt.body) and (orelse is None or not _terminates(orelse.body)):
            return other  # `if c: ...; return` — what follows runs only when c is false
        if isinstance(orelse, cst.Else) and _terminates(orelse.body):
            return path + ((key, taken),)
        return path

    def _walk_block(
        self,
        function: cst.CSTNode,
        block: cst.BaseSuite,
        indent: str | None,
        path: Path,
        loops: tuple[int, ...],
        depth: int,
        out: list[Event],
    ) -> None:
        inner = self._indent(block, indent)
        self._walk(function, _statements(block), inner, path, loops, depth, out)

    def _calls(
        self,
        function: cst.CSTNode,
        node: cst.CSTNode,
        stmt: cst.BaseStatement | None,
        indent: str | None,
        path: Path,
        loops: tuple[int, ...],
        depth: int,
        out: list[Event],
    ) -> None:
        for call in _calls_in_order(node):
            raw = self.t.raw.get(id(call))
            if raw is None:
                continue
            if raw.kind == "call":
                target = self._helper(function, raw.callee or "")
                if target is not None and depth < _MAX_DEPTH:
                    for ev in self._function_events(target, depth + 1):
                        out.append(replace(ev, path=path + ev.path, loops=loops + ev.loops))
                elif target is None and raw.callee and not raw.callee.startswith("self."):
                    for kind, receiver, arg in raw.effects:
                        if kind in (SCALED_BACKWARD, UNSCALE) and receiver:
                            self.t.scalers.add(receiver)
                        out.append(
                            Event(kind, call, receiver, arg, path, loops, function, stmt, indent)
                        )
                continue
            resolved = self.t.resolve(raw)
            if resolved is None:
                continue
            kind, receiver, arg = resolved
            out.append(
                Event(kind, call, receiver, arg, path, loops, function, stmt, indent, raw.flags)
            )

    def _helper(self, function: cst.CSTNode, callee: str) -> _Function | None:
        """The method or module function a `self.m()` / `f()` call runs, if in this file."""
        if callee.startswith("self."):
            cls = self.owner.get(id(function))
            if cls is None:
                return None
            return self.methods.get(id(cls), {}).get(callee[5:])
        found = self.module_functions.get(callee)
        return None if found is function else found


def _annotated_scaler(ctx: Context, name: str) -> bool:
    """A parameter of the current function annotated as a GradScaler (also inside
    `Optional[...]` or a union)."""
    param = ctx.parameter(name)
    if param is None or param.annotation is None:
        return False
    return (
        any(
            ctx.qualname(n) in GRAD_SCALERS
            for n in descendants(param.annotation.annotation)
            if isinstance(n, (cst.Name, cst.Attribute))
        )
        or ctx.qualname(param.annotation.annotation) in GRAD_SCALERS
    )  # type: ignore[arg-type]


def _condition(test: cst.BaseExpression) -> tuple[str | None, bool]:
    """A flag or object test that means the same wherever it is written (`if scaler is not
    None:`, `if not args.amp:`, `if self.use_amp:`): its text, and whether it is negated, so
    that two `if`s on it take matching branches (`if scaler is None` is the `else` of `if
    scaler is not None`). None for other tests (counters, comparisons with numbers)."""
    negated = False
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test, negated = test.expression, not negated
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        if isinstance(target.comparator, cst.Name) and target.comparator.value == "None":
            if isinstance(target.operator, cst.Is):
                test, negated = test.left, not negated
            elif isinstance(target.operator, cst.IsNot):
                test = test.left
            else:
                return None, False
    dotted = dotted_name(test)
    return (f"flag:{dotted}", negated) if dotted is not None else (None, False)


def _statements(block: cst.CSTNode) -> Sequence[cst.CSTNode]:
    if isinstance(block, cst.IndentedBlock):
        return block.body
    if isinstance(block, cst.SimpleStatementSuite):
        return [block]
    if isinstance(block, cst.Module):
        return block.body
    return []


def _blocks(stmt: cst.CSTNode) -> Iterator[cst.BaseSuite]:
    """The blocks of a compound statement, in source order."""
    if isinstance(stmt, (cst.If,)):
        yield stmt.body
        orelse = stmt.orelse
        while isinstance(orelse, cst.If):
            yield orelse.body
            orelse = orelse.orelse
        if isinstance(orelse, cst.Else):
            yield orelse.body
    elif isinstance(stmt, (cst.For, cst.While)):
        yield stmt.body
        if stmt.orelse is not None:
            yield stmt.orelse.body
    elif isinstance(stmt, cst.With):
        yield stmt.body
    elif isinstance(stmt, (cst.Try, cst.TryStar)):
        yield stmt.body
        for handler in stmt.handlers:
            yield handler.body
        if stmt.orelse is not None:
            yield stmt.orelse.body
        if stmt.finalbody is not None:
            yield stmt.finalbody.body
    elif isinstance(stmt, cst.Match):
        for case in stmt.cases:
            yield case.body


def _terminates(block: cst.BaseSuite) -> bool:
    """Whether a block always leaves by return / raise / continue / break."""
    stmts = _statements(block)
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) and last.body:
        return isinstance(last.body[-1], (cst.Return, cst.Raise, cst.Continue, cst.Break))
    return False


class _CallCollector(cst.CSTVisitor):
    """Calls in evaluation order (arguments before the call), skipping nested scopes."""

    def __init__(self) -> None:
        self.calls: list[cst.Call] = []

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def leave_Call(self, original_node: cst.Call) -> None:
        self.calls.append(original_node)


def _calls_in_order(node: cst.CSTNode) -> list[cst.Call]:
    collector = _CallCollector()
    walk(node, collector)
    return collector.calls


# ---- questions the rules ask ----


def params_root(ctx: Context, clip: cst.Call) -> str | None:
    """`model` for `clip_grad_norm_(model.parameters(), ...)`."""
    params = positional(clip, 0, "parameters")
    if (
        isinstance(params, cst.Call)
        and isinstance(params.func, cst.Attribute)
        and params.func.attr.value in ("parameters", "named_parameters")
    ):
        return ctx.code(params.func.value)
    return None


def clip_optimizer(before: Sequence[Event], after: Sequence[Event]) -> str | None:
    """The optimizer a clip prepares: the next step before any backward, else the last one."""
    for ev in after:
        if ev.kind in BACKWARDS:
            break
        if ev.kind in STEPS:
            return ev.optimizer
    for ev in reversed(before):
        if ev.kind in STEPS:
            return ev.optimizer
    return None


def misplaced_clips(ctx: Context, seq: Sequence[Event]) -> Iterator[tuple[Event, str]]:
    """Clips that run where there are no fresh gradients to clip: (clip, which mistake)."""
    for i, clip in enumerate(seq):
        if clip.kind != CLIP:
            continue
        before = [e for e in seq[:i] if e.compatible(clip)]
        after = [e for e in seq[i + 1 :] if e.compatible(clip)]
        last_bw = max((j for j, e in enumerate(before) if e.kind in BACKWARDS), default=None)
        if last_bw is not None:
            since = before[last_bw + 1 :]
            opt = clip_optimizer(since, after)
            root = params_root(ctx, clip.call)
            for ev in since:
                if not ev.on_every_path_to(clip):
                    continue  # `if not finite: recover()` — a step on one branch only
                if ev.kind in STEPS + (ZERO_GRAD,) and _same(ev.optimizer, opt, root, seq):
                    yield clip, "after-step" if ev.kind in STEPS else "after-zero-grad"
                    break
            continue
        for j, ev in enumerate(after):
            if ev.kind in STEPS:
                break  # a loop that steps at its top: the clip acts on the last backward
            if ev.kind in BACKWARDS:
                if any(e.kind in STEPS for e in after[j + 1 :]):
                    yield clip, "before-backward"
                break


def _same(target: str | None, opt: str | None, root: str | None, seq: Sequence[Event]) -> bool:
    """Whether a step / zero_grad on `target` concerns the gradients being clipped."""
    if target is None:
        return False
    if target in (opt, root):
        return True
    if opt is not None:
        return False
    others = {e.optimizer for e in seq if e.kind in STEPS + (ZERO_GRAD,) and e.optimizer}
    return others <= {target, root}


def unscaled_clips(
    t: StepTracker, seq: Sequence[Event]
) -> Iterator[tuple[Event, Event, Event | None]]:
    """Clips of gradients still multiplied by the loss scale: (clip, scaled backward, step)."""
    for i, clip in enumerate(seq):
        if clip.kind != CLIP:
            continue
        plain: list[Event] = []
        unscaled_elsewhere = False
        for ev in reversed(seq[:i]):
            if not ev.compatible(clip):
                # `if amp: unscale_; clip  else: clip`: the other arm is the scaled path
                unscaled_elsewhere = unscaled_elsewhere or ev.kind == UNSCALE
                continue
            if ev.kind in (UNSCALE, UPDATE, ZERO_GRAD) + STEPS:
                break
            if ev.kind == BACKWARD:
                plain.append(ev)
            elif ev.kind == SCALED_BACKWARD:
                # an unscaled backward that can run with this one mixes both: stay silent
                if (
                    "disabled" not in ev.flags
                    and not unscaled_elsewhere
                    and not any(p.compatible(ev) for p in plain)
                ):
                    nxt = next(
                        (e for e in seq[i + 1 :] if e.kind == SCALER_STEP and e.compatible(clip)),
                        None,
                    )
                    yield clip, ev, nxt
                break


def clips_before_scaler_step(seq: Sequence[Event]) -> Iterator[tuple[Event, Event]]:
    """Clips in a function that receives its gradients from a caller (no backward, unscale,
    update, zero_grad or step before the clip in its sequence) and then calls
    `scaler.step(opt)` on an enabled scaler: (clip, scaler step)."""
    for i, clip in enumerate(seq):
        if clip.kind != CLIP:
            continue
        if any(ev.kind != CLIP for ev in seq[:i]):
            continue
        nxt = next(
            (e for e in seq[i + 1 :] if e.kind in (UNSCALE, SCALER_STEP) and e.compatible(clip)),
            None,
        )
        if nxt is not None and nxt.kind == SCALER_STEP and "disabled" not in nxt.flags:
            yield clip, nxt


def steps_without_update(t: StepTracker, seq: Sequence[Event]) -> Iterator[tuple[Event, str]]:
    """`scaler.step(opt)` with no `scaler.update()` in the iteration: (step, "missing"|"outside")."""
    for step in seq:
        if step.kind != SCALER_STEP:
            continue
        updates = [e for e in seq if e.kind == UPDATE and e.receiver == step.receiver]
        loop = next(
            (
                lp
                for lp in reversed(step.loops)
                if any(e.kind in BACKWARDS and lp in e.loops for e in seq)
            ),
            None,
        )
        if not updates:
            if "local" not in step.flags and _updated_elsewhere(step.receiver, t.updated):
                continue  # updated elsewhere in the file (another method or function)
            iteration = loop is not None or any(e.kind in BACKWARDS for e in seq)
            if step.receiver in t.constructed or iteration:
                yield step, "missing"
        elif loop is not None and not any(loop in e.loops for e in updates):
            if _over_optimizers(t.loop_nodes.get(loop)):
                continue  # one step per optimizer, then one update: the documented pattern
            yield step, "outside"


def _updated_elsewhere(receiver: str, updated: set[str]) -> bool:
    """`self.scaler.step(...)` with `self.learn.scaler.update()` in a callback: the same
    attribute reached through another object is the same scaler."""
    if receiver in updated:
        return True
    if "." not in receiver:
        return False
    attr = receiver.rsplit(".", 1)[1]
    return any(u.rsplit(".", 1)[-1] == attr and "." in u for u in updated)


_OPTIMIZERS = re.compile(r"optim|(^|_)opts?($|_|\b)", re.I)


def _over_optimizers(loop: cst.For | cst.While | None) -> bool:
    """`for opt in optimizers:`, `for i in range(self.num_optimizers):`: each pass steps
    another optimizer, and one `scaler.update()` after all of them is right."""
    if not isinstance(loop, cst.For):
        return False
    code = cst.Module([]).code_for_node
    return bool(_OPTIMIZERS.search(code(loop.target)) or _OPTIMIZERS.search(code(loop.iter)))


def unscales_after_step(seq: Sequence[Event]) -> Iterator[tuple[Event, Event]]:
    """`scaler.unscale_(opt)` after `scaler.step(opt)` of the same iteration: (unscale, step)."""
    for i, un in enumerate(seq):
        if un.kind != UNSCALE or un.arg is None:
            continue
        for ev in reversed(seq[:i]):
            if not ev.compatible(un):
                continue
            if ev.kind in BACKWARDS:
                break
            if ev.kind == SCALER_STEP and ev.receiver == un.receiver and ev.arg == un.arg:
                if ev.on_every_path_to(un):  # not `if step: scaler.step(...)` on one branch
                    yield un, ev
                break


def insert_line(
    ctx: Context, event: Event, line: str, before: bool
) -> tuple[cst.CSTNode, str] | None:
    """An edit adding `line` as its own statement before/after the event's statement."""
    stmt = event.stmt
    if not isinstance(stmt, cst.SimpleStatementLine) or event.indent is None:
        return None
    if len(stmt.body) != 1:
        return None
    small = stmt.body[0]
    text = ctx.code(small)
    newline = ctx.module.default_newline
    code = (
        f"{line}{newline}{event.indent}{text}" if before else f"{text}{newline}{event.indent}{line}"
    )
    return small, code


# ---- paths that skip `scaler.update()` ----

_DONE, _SKIP, _OPEN = "done", "skip", "open"


def updates_skipped(seq: Sequence[Event]) -> Iterator[tuple[Event, str]]:
    """`scaler.unscale_(opt)` or `scaler.step(opt)` after which some path leaves the
    iteration (`continue`, `break`, the loop's or function's end, `return` outside a loop)
    without the `scaler.update()` that another path of the same function runs: the next
    unscale_ / step raises. Yields the first such event per scaler: (event, "skipped")."""
    flagged: set[tuple[int, str]] = set()
    for i, ev in enumerate(seq):
        if ev.kind not in (UNSCALE, SCALER_STEP) or ev.receiver is None or ev.stmt is None:
            continue
        key = (id(ev.function), ev.receiver)
        if key in flagged or not _direct(ev, ("unscale_", "step")):
            continue
        updated_later = any(
            e.kind == UPDATE
            and e.receiver == ev.receiver
            and e.function is ev.function
            and _direct(e, ("update",))
            for e in seq[i + 1 :]
        )
        if updated_later and _leaves_without(ev, f"{ev.receiver}.update(") != _DONE:
            flagged.add(key)
            yield ev, "skipped"


def _direct(ev: Event, methods: tuple[str, ...]) -> bool:
    """The event is the call `scaler.m(...)` itself, not a function that runs it."""
    func = ev.call.func
    return isinstance(func, cst.Attribute) and func.attr.value in methods


def _leaves_without(ev: Event, update: str) -> str:
    """How the paths from the event's statement leave its iteration (the innermost loop
    around it that calls `update`, else its function): all through `update` (done), some
    by a jump past it (skip) or some off the end without it (open)."""
    parents = _parents(ev.function)
    node: cst.CSTNode = ev.stmt  # type: ignore[assignment]
    in_loop = any(isinstance(p, (cst.For, cst.While)) for p in _chain(node, parents))
    code = cst.Module([]).code_for_node
    state = _OPEN
    while state == _OPEN:
        block = parents.get(id(node))
        if block is None:
            return state
        if isinstance(block, (cst.IndentedBlock, cst.Module)):
            body = list(block.body)
            state = _run(body[body.index(node) + 1 :], update, in_loop, code)
            owner = parents.get(id(block)) if isinstance(block, cst.IndentedBlock) else None
            if owner is None or isinstance(owner, cst.FunctionDef):
                return state
            if isinstance(owner, (cst.For, cst.While)) and update in code(owner):
                return state  # the end of the iteration that updates
            node = owner  # a loop over optimizers, say: what follows it runs next
        else:
            node = block
    return state


def _chain(node: cst.CSTNode, parents: dict[int, cst.CSTNode]) -> Iterator[cst.CSTNode]:
    while id(node) in parents:
        node = parents[id(node)]
        yield node


def _parents(root: cst.CSTNode) -> dict[int, cst.CSTNode]:
    """Each node's parent under `root`, down to simple statements (not into expressions)."""
    out: dict[int, cst.CSTNode] = {}
    todo = [root]
    while todo:
        node = todo.pop()
        if isinstance(node, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            continue
        for child in children(node):
            if isinstance(child, cst.BaseExpression):
                continue
            out[id(child)] = node
            todo.append(child)
    return out


def _run(stmts: Sequence[cst.CSTNode], update: str, in_loop: bool, code: Any) -> str:
    for stmt in stmts:
        state = _statement(stmt, update, in_loop, code)
        if state != _OPEN:
            return state
    return _OPEN


def _statement(stmt: cst.CSTNode, update: str, in_loop: bool, code: Any) -> str:
    """done / skip / open for one statement (see _leaves_without)."""
    if isinstance(stmt, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
        for small in stmt.body:
            if update in code(small):
                return _DONE
            if isinstance(small, (cst.Continue, cst.Break)):
                return _SKIP
            if isinstance(small, cst.Return):
                return _DONE if in_loop else _SKIP  # in a loop: training ends there
            if isinstance(small, cst.Raise):
                return _DONE
        return _OPEN
    if isinstance(stmt, cst.If):
        body = _run(_statements(stmt.body), update, in_loop, code)
        orelse = stmt.orelse
        if isinstance(orelse, cst.If):
            other = _statement(orelse, update, in_loop, code)
        elif isinstance(orelse, cst.Else):
            other = _run(_statements(orelse.body), update, in_loop, code)
        else:
            other = _OPEN
        if _SKIP in (body, other):
            return _SKIP
        return _DONE if body == other == _DONE else _OPEN
    if isinstance(stmt, cst.With):
        return _run(_statements(stmt.body), update, in_loop, code)
    if isinstance(stmt, (cst.Try, cst.TryStar)):
        if stmt.finalbody is not None and update in code(stmt.finalbody):
            return _DONE
        return _run(_statements(stmt.body), update, in_loop, code)
    if isinstance(stmt, (cst.For, cst.While)):
        return _DONE if update in code(stmt) else _OPEN
    return _OPEN
