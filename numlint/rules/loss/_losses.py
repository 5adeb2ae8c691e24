"""Which loss a call computes, and what it takes as its input (prediction)."""

from __future__ import annotations

import ast
import bisect
from dataclasses import dataclass

import libcst as cst

from numlint.analysis.context import Context
from numlint.analysis.names import bound_names
from numlint.analysis.semantics import positional
from numlint.analysis.summaries import Origin, constructs, loss_wrapper, related
from numlint.diagnostic import Confidence
from numlint.positions import line_offsets, rows_spelling

CROSS_ENTROPY = (
    frozenset({"torch.nn.functional.cross_entropy"}),
    frozenset({"torch.nn.CrossEntropyLoss", "torch.nn.modules.loss.CrossEntropyLoss"}),
)
NLL = (
    frozenset({"torch.nn.functional.nll_loss"}),
    frozenset({"torch.nn.NLLLoss", "torch.nn.modules.loss.NLLLoss"}),
)
BCE = (
    frozenset({"torch.nn.functional.binary_cross_entropy"}),
    frozenset({"torch.nn.BCELoss", "torch.nn.modules.loss.BCELoss"}),
)
#: Losses that apply a sigmoid to their input themselves: they take logits.
ON_LOGITS = (
    frozenset({
        "torch.nn.functional.binary_cross_entropy_with_logits",
        "torch.binary_cross_entropy_with_logits",
        "torch.nn.functional.multilabel_soft_margin_loss",
        "torchvision.ops.sigmoid_focal_loss",
        "torchvision.ops.focal_loss.sigmoid_focal_loss",
    }),
    frozenset({
        "torch.nn.BCEWithLogitsLoss",
        "torch.nn.modules.loss.BCEWithLogitsLoss",
        "torch.nn.MultiLabelSoftMarginLoss",
        "torch.nn.modules.loss.MultiLabelSoftMarginLoss",
    }),
)  # fmt: skip
KL_DIV = (
    frozenset({"torch.nn.functional.kl_div", "torch.kl_div"}),
    frozenset({"torch.nn.KLDivLoss", "torch.nn.modules.loss.KLDivLoss"}),
)


@dataclass(frozen=True)
class LossCall:
    """A call of a loss function or loss module."""

    call: cst.Call
    #: The prediction argument (`input`).
    input: cst.BaseExpression
    #: "function" (`F.cross_entropy(...)`), "inline" (`nn.BCELoss()(...)`) or "module"
    #: (a loss object created elsewhere: `self.criterion(...)`, `loss_fn(...)`).
    spelling: str
    #: The loss module's constructor call, for "inline" and "module".
    constructor: cst.Call | None = None
    #: For "wrapper" (a project function, method or loss class that hands its parameter to
    #: the loss: `self.loss(z, y)`, `FocalLoss()(p, y)`): where it calls the loss.
    through: Origin | None = None

    @property
    def related(self) -> tuple[tuple[tuple[str, int, int], str], ...]:
        return related(self.through) if self.through is not None else ()


def loss_call(
    ctx: Context, call: cst.Call, names: tuple[frozenset[str], frozenset[str]]
) -> LossCall | None:
    """`call` as a call of the loss `names` = (functions, module classes), else None."""
    functions, modules = names
    callee = ctx.callee(call)
    if callee.qualname in functions:
        spelling, ctor = "function", None
    elif callee.instance_of in modules:
        ctor = callee.constructor
        spelling = "inline" if call.func is ctor else "module"
    else:
        return _wrapper_call(ctx, call, names)
    inp = positional(call, 0, "input") or positional(call, 0, "inputs")
    if inp is None:
        return None
    return LossCall(call, inp, spelling, ctor)


def _wrapper_call(
    ctx: Context, call: cst.Call, names: tuple[frozenset[str], frozenset[str]]
) -> LossCall | None:
    """A call of a project function, method or loss class that hands the argument at some
    position, unchanged, to the loss `names` (numlint.analysis.summaries.loss_wrapper)."""
    func = call.func
    if isinstance(func, cst.Name):
        key = func.value
    elif isinstance(func, cst.Attribute):
        key = func.attr.value
    else:
        return None
    if key not in _wrapper_names(ctx, names) or ctx.callee(call).qualname:
        return None  # not a name the file binds to code that spells the loss
    found = loss_wrapper(ctx, call, names)
    if found is None:
        return None
    index, where = found
    plain = [a for a in call.args if a.keyword is None and not a.star]
    if index >= len(plain) or len(plain) != len(call.args):
        return None  # given by keyword or unpacked: not matched to the parameter
    return LossCall(call, plain[index].value, "wrapper", through=where)


def _wrapper_names(ctx: Context, names: tuple[frozenset[str], frozenset[str]]) -> frozenset[str]:
    """The names under which this file can call a wrapper of the loss `names` (read once per
    file, from the lines that spell the loss and the statements holding them): its
    functions, methods and classes whose text spells the loss or a name an assignment
    spelling it binds (`self.loss_func = F.binary_cross_entropy_with_logits`), and the names
    it assigns instances of those classes to. A call by any other name is not asked about."""
    cache: dict[tuple, frozenset[str]] = ctx.shared.setdefault("loss_wrapper_names", {})
    found = cache.get(names)
    if found is not None:
        return found
    words = {q.rsplit(".", 1)[-1] for group in names for q in group}
    source, tree = ctx.source or "", ctx.syntax
    offsets = line_offsets(source)
    carriers = set(words)
    for node in _assignments(tree, rows_spelling(source, words, offsets)):
        carriers.update(_targets(node))  # `self.loss_func = F.binary_..._with_logits`
    rows = sorted(rows_spelling(source, carriers, offsets))
    out: set[str] = set()
    classes: set[str] = set()
    for node, is_class in _definitions(tree):
        if _spans(rows, node):
            out.add(node.name)
            if is_class:
                classes.add(node.name)
    for node in _assignments(tree, rows_spelling(source, classes, offsets)):
        if node.value is not None and any(constructs(node.value, c) for c in classes):
            out.update(_targets(node))  # `criterion = FocalLoss().cuda()`
    found = cache[names] = frozenset(out)
    return found


def _assignments(tree: ast.Module | None, rows: set[int]) -> list[ast.Assign | ast.AnnAssign]:
    """The assignment statements of the file that span one of `rows` (only the blocks of
    statements holding such a row are entered)."""
    if tree is None or not rows:
        return []
    ordered = sorted(rows)
    out: list[ast.Assign | ast.AnnAssign] = []
    stack: list[list] = [tree.body]
    while stack:
        for stmt in stack.pop():
            if not _spans(ordered, stmt):
                continue
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                out.append(stmt)
                continue
            for field in ("body", "orelse", "finalbody", "handlers"):
                block = getattr(stmt, field, None)
                if isinstance(block, list):
                    stack.append(block)
    return out


def _spans(rows: list[int], node: ast.stmt) -> bool:
    """One of the sorted `rows` lies within the lines of `node`."""
    k = bisect.bisect_left(rows, node.lineno)
    return k < len(rows) and rows[k] <= (node.end_lineno or node.lineno)


def _targets(node: ast.Assign | ast.AnnAssign) -> set[str]:
    """The names and attributes an assignment binds (`x`, `self.x`, `a, b`)."""
    out: set[str] = set()
    for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
        if isinstance(target, ast.Attribute):
            out.add(target.attr)
        else:
            out.update(bound_names(target))
    return out


def _definitions(tree: ast.Module | None) -> list[tuple[ast.FunctionDef | ast.ClassDef, bool]]:
    """The file's top-level functions and classes and the classes' methods, each with
    whether it is a class."""
    if tree is None:
        return []
    out: list = []
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append((stmt, False))
        elif isinstance(stmt, ast.ClassDef):
            out.append((stmt, True))
            out += [
                (m, False)
                for m in stmt.body
                if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
            ]
    return out


def configuration_grade(ctx: Context, loss: LossCall) -> Confidence | None:
    """`low` where the loss is chosen by a configuration (below); None keeps the rule's
    grade."""
    return "low" if chosen_by_configuration(ctx, loss) else None


def chosen_by_configuration(ctx: Context, loss: LossCall) -> bool:
    """The loss object or its input is a `self.` attribute that the class sets to different
    things in different places (`self.criterion = ContrastiveLoss(...)` on one arm of a
    configuration test, `nn.CrossEntropyLoss()` on another): which pairs up depends on the
    run, so the finding is only as likely as that configuration."""
    cls = ctx.class_scope
    if cls is None or not cls.varied:
        return False
    for expr in (loss.call.func, loss.input):
        node: cst.BaseExpression | None = expr
        for _ in range(6):
            if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name):
                if node.value.value == "self":
                    if node.attr.value in cls.varied:
                        return True
                    break
            if isinstance(node, cst.Name):
                binding = ctx.lookup(node.value)
                node = binding.value if binding is not None else None
            elif isinstance(node, cst.Subscript):
                node = node.value
            elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
                node = node.func.value  # `self.score.view(-1)`
            else:
                break
    return False
