"""Can a gradient flow through an expression at the node being visited?

A hazard whose only harm is a NaN or infinite gradient (sqrt or a norm at 0, acos at ±1)
does not apply where none can flow: under `torch.no_grad()`, in a value that is immediately
turned into a Python number or NumPy array (`.item()`, `.cpu().numpy()`, `float(...)`), in
a detached value, in code that PyTorch Lightning runs without gradients
(`validation_step`, `test_step`, `predict_step`), in a constructor, in a derivative written by
hand (`*_grad_reference`, `vjp`), in a Dataset's methods (the data loader), in the batches a
training loop draws (`for x, y in loader:` around `loss.backward()`, unless made
differentiable with `requires_grad_()`), in a script that
never trains and no other file imports (a `demo.py`), in values built
only from constants (also each name unpacked from a comprehension over sizes:
`u, v = [torch.arange(n) / n for n in x.shape[-2:]]`), in values taken from an operation without a derivative
(`torch.unique`, `argmax`, rounding), or in what a module-level function or staticmethod of
the project that makes no tensor requiring grad computes from such values.
"""

from __future__ import annotations

import ast
import os
import re

import libcst as cst

from numlint.analysis.context import Binding, Context, Env, Value
from numlint.analysis.guards import assigned_here, assigned_name
from numlint.analysis.ops import unpacked_size, unpacking_call
from numlint.analysis.places import evaluation_code, inference_code
from numlint.analysis.summaries import (
    detached_result,
    file_text,
    function_key,
    of_arguments_only,
    project_files,
    project_root,
    returns_numbers,
)
from numlint.analysis.tables import NOT_DIFFERENTIABLE, ROUNDING, TRANSPARENT_METHODS
from numlint.tree import call_name, descendants

#: Methods after which no gradient flows back.
_DETACHING = frozenset({"item", "tolist", "numpy", "detach", "detach_"})
_PY_CASTS = frozenset({"float", "int", "bool"})
#: Functions whose result holds their tensor arguments' values, entry by entry.
_PASSING = frozenset(
    {"torch.where", "torch.clamp", "torch.clip", "torch.nan_to_num", "torch.stack", "torch.cat"}
)
#: Methods Lightning calls under `torch.no_grad()` / inference mode.
_NO_GRAD_HOOKS = frozenset(
    {"validation_step", "test_step", "predict_step", "on_validation_batch_end",
     "on_test_batch_end", "validation_epoch_end", "test_epoch_end"}
)  # fmt: skip


def gradient_flows(ctx: Context, operand: cst.BaseExpression) -> bool:
    """Whether a gradient can flow back through `operand` (an argument of the node being
    visited): False in the cases listed in this module's docstring."""
    if ctx.in_no_grad() or no_gradient(ctx, ctx.value(operand)):
        return False
    func = ctx.function
    cls = ctx.class_scope
    if evaluation_code(ctx.path, func.name.value if func is not None else "") and (
        inference_code(ctx.path) or not (module_forward(ctx) or forward_helper(ctx))
    ):
        return False  # a module's forward, and a helper only forwards call, train wherever
        # their file lives (`models/metrics.py`, a perceptual metric's network used as a loss)
    if func is not None and func.returns is not None:
        if returns_numbers(ctx.code(func.returns.annotation)):
            return False  # `-> float`: what it computes leaves as a Python number
    if func is not None and _derivative_by_hand(ctx, func):
        return False
    if func is not None and _handed_to_custom_function(ctx, func):
        return False
    if func is not None and cls is not None:
        if func.name.value in _NO_GRAD_HOOKS or func.name.value == "__init__":
            return False  # a constructor's values are leaves: nothing differentiates through them
        if _autograd_function(ctx, cls.node):
            return False  # a custom autograd.Function: forward, backward and their helpers
            # run without autograd
        if _optimizer_class(ctx, cls.node):
            return False  # an optimizer: `step` and its helpers update parameters in place
        if func.name.value == "sample" and _distribution_class(ctx, cls.node):
            return False  # `Distribution.sample` draws without gradient (`rsample` has one)
        if _dataset_class(ctx, cls.node):
            return False  # a Dataset's methods run in the data loader, on data
    if _consumed_without_gradient(ctx) or _through_data(operand):
        return False
    if inference_script(ctx):
        return False
    return not only_used_without_gradient(ctx)


#: Text that shows a file may train, or hand its functions to code that does.
_TRAINING_TEXT = re.compile(
    r"backward|autograd|create_graph|optim|\.step\(|\.fit\(|\btrain|Trainer|torch\.func|"
    r"functorch|requires_grad"
)


def inference_script(ctx: Context) -> bool:
    """The file is a script (`if __name__ == "__main__":`) that no other file of its project
    imports and that never trains: no backward, autograd, optimizer, `.fit(` or training
    call appears in it (a `demo.py`, `test.py`, `sample.py`). Nothing it computes is
    differentiated."""
    found = ctx.shared.get("inference_script")
    if found is None:
        found = ctx.shared["inference_script"] = _inference_script(ctx)
    return found


def _inference_script(ctx: Context) -> bool:
    source = ctx.source
    if source is None or ctx.path.startswith("<") or "__main__" not in source:
        return False
    if _TRAINING_TEXT.search(source) or not _main_block(ctx.syntax):
        return False
    return not imported_elsewhere(ctx)


def imported_elsewhere(ctx: Context) -> bool:
    """Another file of the project imports the file being linted (it is a module of a
    package, not only a script): cached per file."""
    found = ctx.shared.get("imported_elsewhere")
    if found is None:
        found = ctx.shared["imported_elsewhere"] = _imported_elsewhere(ctx)
    return found


def _imported_elsewhere(ctx: Context) -> bool:
    if ctx.path.startswith("<"):
        return False
    stem = os.path.splitext(os.path.basename(ctx.path))[0]
    word = rf"\b{re.escape(stem)}\b"
    imported = re.compile(
        rf"^\s*(from\s+[\w.]*{word}|import\s+[\w.]*{word}|from\s+[\w.]+\s+import\s[^\n]*{word})",
        re.M,
    )
    here = os.path.abspath(ctx.path)
    files, _ = project_files(project_root(here))
    for path in files:
        if path != here and stem in (text := file_text(path) or "") and imported.search(text):
            return True
    return False


def _main_block(tree: ast.Module | None) -> bool:
    """A top-level `if __name__ == "__main__":` (either way round)."""
    for n in tree.body if tree is not None else ():
        if isinstance(n, ast.If) and isinstance(n.test, ast.Compare):
            sides = [n.test.left, *n.test.comparators]
            names = {s.id for s in sides if isinstance(s, ast.Name)}
            texts = {s.value for s in sides if isinstance(s, ast.Constant)}
            if names == {"__name__"} and texts == {"__main__"}:
                return True
    return False


def objective(ctx: Context) -> bool:
    """The function being visited computes what training minimises (a loss, a training
    step, or code whose result a caller calls backward on;
    numlint.analysis.summaries.Project.objective)."""
    project = ctx.project
    key = function_key(ctx)
    return project is not None and key is not None and project.objective(key)


def module_forward(ctx: Context) -> bool:
    """The function being visited is the `forward` of an nn.Module class."""
    project = ctx.project
    key = function_key(ctx)
    return project is not None and key is not None and project.module_forward(key)


def forward_helper(ctx: Context) -> bool:
    """The function being visited is a helper that only modules' `forward` methods call."""
    project = ctx.project
    key = function_key(ctx)
    return project is not None and key is not None and project.forward_helper(key)


def trained(ctx: Context) -> bool:
    """The function being visited is what training minimises, a module's `forward`, or a
    helper only those call: code that runs, with gradients, at every training step."""
    project = ctx.project
    key = function_key(ctx)
    return project is not None and key is not None and project.trained(key)


def gradient_evident(ctx: Context) -> bool:
    """Positive evidence that autograd differentiates the function being visited (a method
    of an nn.Module, a loss, a function calling backward or autograd.grad, or one called by
    such code; numlint.analysis.summaries.Project.differentiated). Hazards whose only harm
    is a NaN gradient are shown by default only with it: a library function, a solver or a
    schedule that nothing visibly differentiates is graded low."""
    project = ctx.project
    key = function_key(ctx)
    return project is not None and key is not None and project.differentiated(key)


_DERIVATIVE_NAME = re.compile(r"(^|_)(grad|grads|gradient|gradients|backward|bwd|vjp|jvp)(_|$)")
_AUTOGRAD_USE = re.compile(r"autograd\.grad|create_graph|\.backward\(|torch\.func\.")


def _derivative_by_hand(ctx: Context, func: cst.FunctionDef) -> bool:
    """A function named for a gradient it computes by hand (`_edge_env_mat_grad_reference`,
    `_backward`, `vjp`) that does not call autograd itself: its values are a derivative,
    not differentiated again (a gradient penalty calls `autograd.grad` and stays checked).
    Not one that the project differentiates (an image gradient, `gradient_magnitude`,
    called by a loss's `forward`)."""
    if not _DERIVATIVE_NAME.search(func.name.value):
        return False
    return not _AUTOGRAD_USE.search(ctx.code(func)) and not gradient_evident(ctx)


def _handed_to_custom_function(ctx: Context, func: cst.FunctionDef) -> bool:
    """A nested function passed to a custom autograd.Function (`Core.apply(a, f, g_builder)`),
    directly or through a function of this file that passes that parameter on: it runs
    inside the Function's forward or backward, where autograd does not record."""
    outer = [s.node for s in ctx.scopes if s.kind == "function" and s.node is not func]
    if not outer or ctx.syntax is None:
        return False
    custom, helpers = _custom_functions(ctx)
    name = func.name.value
    for call in (n for n in descendants(outer[-1]) if isinstance(n, cst.Call)):
        position = next(
            (i for i, a in enumerate(call.args) if isinstance(a.value, cst.Name)
             and a.value.value == name and a.keyword is None),
            None,
        )  # fmt: skip
        if position is None:
            continue
        f = call.func
        if isinstance(f, cst.Attribute) and f.attr.value == "apply":
            if isinstance(f.value, cst.Name) and f.value.value in custom:
                return True
        if isinstance(f, cst.Name) and position in helpers.get(f.value, ()):
            return True
    return False


def _custom_functions(ctx: Context) -> tuple[frozenset[str], dict[str, frozenset[int]]]:
    """The file's custom autograd.Function classes, and for each module-level function the
    positions of the parameters it passes on to one of their `apply` calls."""
    cache = ctx.shared.get("custom_functions")
    if cache is not None:
        return cache
    tree = ctx.syntax
    custom = frozenset(
        n.name
        for n in tree.body  # type: ignore[union-attr]
        if isinstance(n, ast.ClassDef)
        and any(ast.unparse(b).endswith("Function") for b in n.bases)  # autograd's, a wrapper
    )
    helpers: dict[str, frozenset[int]] = {}
    for n in tree.body:  # type: ignore[union-attr]
        if not isinstance(n, ast.FunctionDef):
            continue
        params = [a.arg for a in n.args.args]
        passed = {
            a.id
            for c in ast.walk(n)
            if isinstance(c, ast.Call)
            and isinstance(c.func, ast.Attribute)
            and c.func.attr == "apply"
            and isinstance(c.func.value, ast.Name)
            and c.func.value.id in custom
            for a in c.args
            if isinstance(a, ast.Name)
        }
        positions = frozenset(i for i, p in enumerate(params) if p in passed)
        if positions:
            helpers[n.name] = positions
    ctx.shared["custom_functions"] = (custom, helpers)
    return custom, helpers


def _autograd_function(ctx: Context, node: cst.CSTNode) -> bool:
    """A subclass of `torch.autograd.Function`, or a class written to its protocol (a
    `@staticmethod def backward(ctx, ...)`, whatever base a library wraps it in)."""
    if any(
        qual.endswith(("autograd.Function", "autograd.function.Function"))
        for qual, _ in _bases(ctx, node)
    ):
        return True
    if not isinstance(node, cst.ClassDef) or not isinstance(node.body, cst.IndentedBlock):
        return False
    for stmt in node.body.body:
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value == "backward":
            static = any(
                isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod"
                for d in stmt.decorators
            )
            first = stmt.params.params[0].name.value if stmt.params.params else ""
            return static and first == "ctx"
    return False


def _optimizer_class(ctx: Context, node: cst.CSTNode) -> bool:
    """A subclass of an optimizer (`torch.optim.Optimizer`, a library's `BaseOptimizer`)."""
    return based_on(ctx, node, "Optimizer")


def _distribution_class(ctx: Context, node: cst.CSTNode) -> bool:
    """A subclass of a probability distribution (`torch.distributions.Distribution`, a
    library's `TorchDistribution`), whose `sample` is not differentiable by contract."""
    return based_on(ctx, node, "Distribution")


def _dataset_class(ctx: Context, node: cst.CSTNode) -> bool:
    """A subclass of a dataset (`torch.utils.data.Dataset`, `IterableDataset`, a project's
    `BaseDataset`): `__getitem__` and its helpers make samples in the data loader, where
    nothing is differentiated."""
    return based_on(ctx, node, "Dataset")


def based_on(ctx: Context, node: cst.CSTNode, suffix: str) -> bool:
    """A class with a base whose last dotted part ends with `suffix`."""
    return any(
        (qual or written).rsplit(".", 1)[-1].endswith(suffix) for qual, written in _bases(ctx, node)
    )


def _bases(ctx: Context, node: cst.CSTNode) -> list[tuple[str, str]]:
    """The base classes of a class: (qualified name, "" where not imported; as written)."""
    if not isinstance(node, cst.ClassDef):
        return []
    return [(ctx.qualname(b.value) or "", ctx.code(b.value)) for b in node.bases]


def _through_data(node: cst.CSTNode) -> bool:
    """The operand reads `.data` of a tensor (outside autograd)."""
    return any(isinstance(n, cst.Attribute) and n.attr.value == "data" for n in descendants(node))


def _consumed_without_gradient(ctx: Context) -> bool:
    """The node being visited is, through value-keeping methods, turned into a Python
    number, a list or a NumPy array, or detached (`(...).sqrt().mean().item()`)."""
    stack = ctx.stack
    i = len(stack) - 1
    while i >= 2:
        child, parent, grand = stack[i], stack[i - 1], stack[i - 2]
        if (
            isinstance(parent, cst.Attribute)
            and parent.value is child
            and isinstance(grand, cst.Call)
        ):
            name = parent.attr.value
            if name in _DETACHING:
                return True
            i -= 2  # another tensor method: what matters is where its result goes
            continue
        if isinstance(parent, cst.Arg) and isinstance(grand, cst.Call):
            func = grand.func
            if (
                isinstance(func, cst.Name)
                and func.value in _PY_CASTS
                and ctx.lookup(func.value) is None
            ):
                return True
            if ctx.qualname(func) in _PASSING:
                i -= 2  # `torch.where(c, a / b, 0).cpu().numpy()`: where the result goes
                continue
            # `w.data.copy_(w / n)`: written into a tensor's data, outside autograd
            return isinstance(func, cst.Attribute) and _data_of(func.value)
        if isinstance(parent, (cst.BinaryOperation, cst.UnaryOperation)):
            i -= 1
            continue
        if isinstance(parent, cst.AugAssign):
            return parent.value is child and _data_of(parent.target)  # `w.data *= s.sqrt()`
        if isinstance(parent, cst.Assign):
            return parent.value is child and all(_data_of(t.target) for t in parent.targets)
        return False
    return False


def _data_of(node: cst.CSTNode) -> bool:
    """`w.data` or an entry of it (`w.data[i]`): a tensor's storage, outside autograd."""
    while isinstance(node, cst.Subscript):
        node = node.value
    return isinstance(node, cst.Attribute) and node.attr.value == "data"


def only_used_without_gradient(ctx: Context) -> bool:
    """The value computed by the statement being visited is assigned to a name that the rest
    of the function only compares, rounds, bins (`torch.bucketize`) or takes an argmin of:
    no gradient reaches it (`d = torch.sqrt(...)`, `return torch.bucketize(d, bins)`)."""
    return _only_read_by(ctx, NOT_DIFFERENTIABLE)


def _only_read_by(ctx: Context, harmless: frozenset[str]) -> bool:
    """Every later read of the name the current statement assigns (at least one) goes into
    one of `harmless` or a comparison."""
    here = assigned_here(ctx)
    if here is None:
        return False
    name, later = here
    return _reads_without_gradient(name, later, harmless, depth=2, torch_names=_torch_names(ctx))


def _reads_without_gradient(
    name: str,
    later: list[cst.CSTNode],
    harmless: frozenset[str],
    depth: int,
    torch_names: frozenset[str] = frozenset(),
) -> bool:
    """Every read of `name` in `later` (at least one) goes into one of `harmless` or a
    comparison, or (up to `depth` names deep) into another name assigned from it through
    arithmetic, indexing and torch calls whose own reads do (`e = 20 * log10(sqrt(p))`,
    `m = e.max()`, `keep = e - m > -40`)."""
    uses = _Uses(name, harmless, carry=depth > 0, torch_names=torch_names)
    handed = _visit_later(uses, later)
    if uses.count == 0 or uses.count != uses.without_gradient:
        return False
    return all(
        _reads_without_gradient(other, rest, harmless, depth - 1, torch_names)
        for other, rest in handed
    )


def _visit_later(
    uses: _Uses, later: list[cst.CSTNode], thresholds: bool = False
) -> list[tuple[str, list[cst.CSTNode]]]:
    """Count the reads in `later` with `uses`; return the names it carried the value into,
    each with the statements after the one assigning it. With `thresholds`, a statement that
    only bounds the name (`r = r.clamp(max=1)`) is skipped and one rebinding it ends the
    count."""
    handed: list[tuple[str, list[cst.CSTNode]]] = []
    for i, s in enumerate(later):
        if thresholds and _bounds_itself(s, uses.name):
            continue
        s.visit(uses)
        # a name assigned inside a loop or branch is read in the rest of it too
        rest = later[i + 1 :] if isinstance(s, cst.SimpleStatementLine) else later[i:]
        handed += [(other, rest) for other in uses.carried]
        uses.carried.clear()
        if thresholds and assigned_name(s) == uses.name:
            break
    return handed


#: Operations that only rank their input: a -inf entry just sorts last.
_RANKING = frozenset({"topk", "argsort", "argmax", "argmin", "sort", "kthvalue", "multinomial"})


def only_ranked(ctx: Context) -> bool:
    """The value computed by the statement being visited is only ranked by the rest of the
    function (`keys = torch.rand(n).log() / w`, `keys.topk(k).indices`): an infinite entry
    sorts last and harms nothing."""
    return _only_read_by(ctx, _RANKING)


#: Calls that keep a threshold a threshold: `r = torch.min(r, one)[0]`, `r.clamp(max=1)`.
_BOUNDING = frozenset({"min", "max", "minimum", "maximum", "clamp", "clamp_min", "clamp_max"})


def compared_here(ctx: Context) -> bool:
    """The node being visited only feeds, through arithmetic and element-wise functions, a
    comparison in its own expression (`((dev / n) ** 0.5) > 0.1`, `torch.sqrt(l / l[0]) >
    rcond`): a NaN there makes the test False."""
    return _feeds_comparison(
        ctx.stack[:-1], (cst.BinaryOperation, cst.UnaryOperation), elementwise=True
    )


#: Element-wise functions a comparison sees through (`torch.sqrt(r) > t`, `r.abs() < t`).
_ELEMENTWISE = frozenset({"sqrt", "abs", "log", "log10", "log2", "exp", "square", "float"})


def _feeds_comparison(
    parents: list[cst.CSTNode], through: tuple[type, ...], elementwise: bool = False
) -> bool:
    """Whether the innermost of `parents` lead, through nodes of the kinds `through` (and,
    with `elementwise`, calls of `_ELEMENTWISE` functions and methods), to a comparison."""
    for parent in reversed(parents):
        if isinstance(parent, (cst.Comparison, cst.ComparisonTarget)):
            return True
        if elementwise and isinstance(parent, (cst.Arg, cst.Attribute)):
            continue  # checked at the call they belong to
        if elementwise and isinstance(parent, cst.Call) and call_name(parent) in _ELEMENTWISE:
            continue
        if not isinstance(parent, through):
            return False
    return False


def only_thresholds(ctx: Context) -> bool:
    """The value computed by the statement being visited is assigned to a name that the rest
    of the block only compares against (`r = h / m`, `keep = u > 1 - r`), possibly after
    bounding it (`r = torch.min(r, one)[0]`): a NaN or inf there makes a comparison False or
    True, never a NaN value."""
    here = assigned_here(ctx)
    if here is None:
        return False
    name, later = here
    torch_names = _torch_names(ctx)
    uses = _Thresholds(name, frozenset(), carry=True, torch_names=torch_names)
    handed = _visit_later(uses, later, thresholds=True)
    if uses.count == 0 or uses.count != uses.without_gradient:
        return False
    # `a = acos(d / n)`, `dist = n * sin(a)`, `near = dist <= tol`: names made from it
    return all(
        _reads_without_gradient(o, rest, frozenset(), depth=1, torch_names=torch_names)
        for o, rest in handed
    )


def _bounds_itself(stmt: cst.CSTNode, name: str) -> bool:
    """`r = min(r, 1)`, `r = torch.min(r, t)[0]`, `r = r.clamp(max=1)`."""
    if assigned_name(stmt) != name:
        return False
    value = stmt.body[0].value  # type: ignore[attr-defined]
    if isinstance(value, cst.Subscript):
        value = value.value
    if not isinstance(value, cst.Call):
        return False
    func = value.func
    called = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
    return called in _BOUNDING


#: Nodes a value flows through on its way into an assignment (`d[i] * -s`).
_CARRYING = (
    cst.BinaryOperation, cst.UnaryOperation, cst.Subscript, cst.SubscriptElement, cst.Index
)  # fmt: skip


def _torch_names(ctx: Context) -> frozenset[str]:
    """The names this file imports from torch (`from torch import sin`, or a project's own
    re-export of a torch function: see Context._reexported)."""
    return frozenset(k for k, v in ctx.imports.items() if v.startswith("torch."))


def _torch_spelled(func: cst.BaseExpression, torch_names: frozenset[str] = frozenset()) -> bool:
    """`torch.max`, `torch.nn.functional.pad`, `F.pad`, or a name imported from torch: a
    torch function by its spelling."""
    if isinstance(func, cst.Name) and func.value in torch_names:
        return True
    while isinstance(func, cst.Attribute):
        func = func.value
    return isinstance(func, cst.Name) and func.value in ("torch", "F")


class _Uses(cst.CSTVisitor):
    """Counts the reads of a name, and those that go (as receiver or argument) into one of
    `harmless` or a comparison."""

    def __init__(
        self,
        name: str,
        harmless: frozenset[str] = NOT_DIFFERENTIABLE,
        carry: bool = False,
        torch_names: frozenset[str] = frozenset(),
    ) -> None:
        self.name = name
        self.torch_names = torch_names
        self.harmless = harmless
        self.carry = carry
        self.carried: list[str] = []
        self.count = 0
        self.without_gradient = 0
        self.stack: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.Name) and node.value == self.name:
            if not self._is_target():
                self.count += 1
                self.without_gradient += self._no_gradient() or (
                    self.carry and self._carried_into_name()
                )
        self.stack.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.stack.pop()

    def _is_target(self) -> bool:
        return bool(self.stack) and isinstance(self.stack[-1], cst.AssignTarget)

    def _no_gradient(self) -> bool:
        parents = self.stack
        i = len(parents) - 1
        while i >= 0:
            if isinstance(parents[i], (cst.BinaryOperation, cst.UnaryOperation)):
                i -= 1  # `torch.sort(d + pad).indices`: what the sum goes into decides
            elif _conversion(parents[i], parents[i - 1] if i > 0 else None):
                i -= 2  # `u.detach().cpu().numpy() * m > w`: the same values, elsewhere
            else:
                break
        if i < 0:
            return False
        p = parents[i]
        if isinstance(p, cst.Comparison) or isinstance(p, cst.ComparisonTarget):
            return True
        if isinstance(p, cst.Attribute) and i > 0 and isinstance(parents[i - 1], cst.Call):
            return p.attr.value in self.harmless or _indices_taken(parents[:i])
        if isinstance(p, cst.Arg) and i > 0 and isinstance(parents[i - 1], cst.Call):
            call = parents[i - 1]
            if call_name(call) in ("to", "type_as") and isinstance(call.func, cst.Attribute):
                return True  # `x.to(u)`: `u` gives only a dtype and a device
            return call_name(call) in self.harmless or _indices_taken(parents[:i])
        return False

    def _carried_into_name(self) -> bool:
        """The read reaches, through arithmetic, indexing, tensor methods and torch
        functions, the value of `other = ...`: recorded in `carried`, to be followed."""
        parents = self.stack
        i = len(parents) - 1
        while i >= 0:
            p = parents[i]
            call = parents[i - 1] if i > 0 else None
            if isinstance(p, (cst.Comparison, cst.ComparisonTarget)):
                return True
            if isinstance(call, cst.Call) and (
                (isinstance(p, cst.Attribute) and call.func is p)
                or (isinstance(p, cst.Arg) and _torch_spelled(call.func, self.torch_names))
            ):
                if call_name(call) in self.harmless or _indices_taken(parents[: i - 1]):
                    return True
                i -= 2
            elif isinstance(p, _CARRYING):
                i -= 1
            elif isinstance(p, cst.Assign) and len(p.targets) == 1:
                target = p.targets[0].target
                if isinstance(target, cst.Name) and target.value != self.name:
                    self.carried.append(target.value)
                    return True
                return False
            else:
                return False
        return False


#: Methods that hand on the same values (another device, array type or graph).
_CONVERSIONS = frozenset({"detach", "cpu", "cuda", "numpy", "float", "double", "clone", "to"})


def _conversion(node: cst.CSTNode, above: cst.CSTNode | None) -> bool:
    """`node` is the `.detach` of a `.detach()` call (`above`)."""
    return (
        isinstance(node, cst.Attribute)
        and node.attr.value in _CONVERSIONS
        and isinstance(above, cst.Call)
        and above.func is node
    )


#: Calls whose second result (`.indices`, `[1]`) is an index tensor, with no gradient.
_WITH_INDICES = frozenset(
    {"sort", "topk", "max", "min", "kthvalue", "median", "mode", "cummax", "cummin"}
)


def _indices_taken(above: list[cst.CSTNode]) -> bool:
    """The call just left (`above[-1]` is what holds it) is a sort or top-k whose indices only
    are kept: `torch.sort(d, dim=1).indices`, `d.topk(3)[1]`, `_, idx = d.topk(3)`."""
    if len(above) < 2:
        return False
    call, holder = above[-1], above[-2]
    if not isinstance(call, cst.Call) or call_name(call) not in _WITH_INDICES:
        return False
    if isinstance(holder, cst.Attribute) and holder.value is call:
        return holder.attr.value == "indices"
    if isinstance(holder, cst.Assign) and holder.value is call and len(holder.targets) == 1:
        target = holder.targets[0].target  # `_, idx = d.topk(k)`: the values are dropped
        return (
            isinstance(target, (cst.Tuple, cst.List))
            and len(target.elements) == 2
            and isinstance(target.elements[0].value, cst.Name)
            and target.elements[0].value.value == "_"
        )
    if isinstance(holder, cst.Subscript) and holder.value is call and len(holder.slice) == 1:
        index = holder.slice[0].slice
        return (
            isinstance(index, cst.Index)
            and isinstance(index.value, cst.Integer)
            and (index.value.value == "1")
        )
    return False


class _Thresholds(_Uses):
    """Counts the reads of a name, and those that reach a comparison through arithmetic."""

    def _no_gradient(self) -> bool:  # `log_u[i] < log_ratio`: an entry, compared
        arithmetic = (cst.BinaryOperation, cst.UnaryOperation, cst.Subscript)
        return _feeds_comparison(self.stack, arithmetic)


#: Tensor constructors: their results never require a gradient, whatever their arguments.
CONSTRUCTORS = frozenset(
    {
        "torch.arange", "torch.range", "torch.zeros", "torch.ones", "torch.empty", "torch.full",
        "torch.eye", "torch.tensor", "torch.as_tensor", "torch.linspace", "torch.logspace",
        "torch.meshgrid", "torch.randint", "torch.randn", "torch.rand", "torch.randperm",
        "torch.zeros_like", "torch.ones_like", "torch.empty_like", "torch.full_like",
        "torch.randint_like", "torch.randn_like", "torch.rand_like", "torch.tril_indices",
        "torch.triu_indices", "torch.LongTensor", "torch.FloatTensor", "torch.Tensor",
    }
)  # fmt: skip


#: Functions that combine tensors without creating a gradient of their own.
_COMBINERS = frozenset(
    {"torch.stack", "torch.cat", "torch.concat", "torch.flatten", "einops.rearrange",
     "einops.reduce", "einops.repeat"}
)  # fmt: skip
#: Functions whose result has a gradient only if their tensor arguments have one.
_COUNTING = frozenset(
    {"torch.sum", "torch.cumsum", "torch.count_nonzero", "torch.any", "torch.all"}
)
_BOOLEAN_OPS = frozenset(
    {"eq", "ne", "gt", "lt", "ge", "le", "logical_and", "logical_or", "logical_not",
     "logical_xor", "count_nonzero", "any", "all"}
)  # fmt: skip


def _torch_function(qualname: str | None) -> bool:
    """A function of the torch namespace (not a module class or `nn.Parameter`)."""
    if qualname is None or not qualname.startswith("torch."):
        return False
    return not qualname.startswith("torch.nn.") or qualname.startswith("torch.nn.functional.")


#: Keyword arguments that are options, not tensors.
_OPTION_KEYWORDS = frozenset(
    {"dim", "keepdim", "dtype", "device", "p", "ord", "out", "axis", "layout", "memory_format",
     "non_blocking", "copy", "pin_memory", "rounding_mode", "correction", "unbiased", "eps"}
)  # fmt: skip

_PY_NUMBERS = frozenset({"int", "float", "len", "round", "abs", "min", "max", "range"})


#: Constructors whose elements are whole numbers (given whole-number arguments).
#: Functions and methods returning counts (whole numbers, in whatever dtype they are asked for).
_COUNTS = frozenset(
    {"torch.bincount", "torch.count_nonzero", "torch.histc", "torch_geometric.utils.degree",
     "torch_geometric.utils.degree.degree"}
)  # fmt: skip
_COUNT_METHODS = frozenset({"bincount", "count_nonzero", "histc", "numel"})


def _integral(node: cst.Float) -> bool:
    """`2.0`, `1.`: a float literal holding a whole number."""
    try:
        return float(node.value).is_integer()
    except ValueError:
        return False


_INTEGER_CONSTRUCTORS = frozenset(
    {
        "torch.arange", "torch.range", "torch.zeros", "torch.ones", "torch.eye", "torch.meshgrid",
        "torch.randint", "torch.randperm", "torch.zeros_like", "torch.ones_like",
        "torch.tril_indices", "torch.triu_indices", "torch.LongTensor",
    }
)  # fmt: skip


_INTEGER_OPS = (cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide, cst.Modulo)


def no_gradient(ctx: Context, value: Value, depth: int = 0, integers: bool = False) -> bool:
    """Whether a value is built only from tensor constructors, constants and Python numbers
    (`torch.arange(n).view(1, -1) - torch.arange(n).view(-1, 1)`, `idx ** 2 + idy ** 2`), or
    detached: no gradient can flow through it, so gradient-only hazards do not apply.

    With `integers`, also require whole-number values (integer constructors and arithmetic).
    """
    if depth > 12:
        return False
    value = ctx.deref(value)
    node, env = value.node, value.env

    def sub(expr: cst.BaseExpression) -> bool:
        return no_gradient(ctx, Value(expr, env), depth + 1, integers)

    if isinstance(node, cst.Integer):
        return True
    if isinstance(node, cst.Float):
        return not integers or _integral(node)
    if isinstance(node, cst.Comparison):
        return True  # a bool tensor: `(x > t).sum()` counts, it carries no gradient
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        return True  # an einops pattern
    if isinstance(node, cst.UnaryOperation):
        return sub(node.expression)
    if isinstance(node, cst.IfExp):
        return sub(node.body) and sub(node.orelse)
    if isinstance(node, cst.BinaryOperation):
        if integers and not isinstance(node.operator, _INTEGER_OPS):
            if not (isinstance(node.operator, cst.Power) and isinstance(node.right, cst.Integer)):
                return False
        return sub(node.left) and sub(node.right)
    if isinstance(node, cst.Subscript):
        if not integers and _input_batch_entry(ctx, node):
            return True  # `feats["template_ca"]`: data the model is given
        return sub(node.value)
    if isinstance(node, (cst.Tuple, cst.List)):
        return all(sub(e.value) for e in node.elements)
    if isinstance(node, (cst.ListComp, cst.GeneratorExp)) and not integers:
        return _comprehension_without_gradient(ctx, Value(node, env), depth + 1)
    if isinstance(node, cst.Attribute) and node.attr.value in ("shape", "ndim"):
        return True
    if isinstance(node, (cst.Name, cst.Attribute)):
        qual = ctx.qualname(node, env)
        if qual is not None and qual.startswith("math."):
            return not integers  # `math.pi`: a Python float
        if isinstance(node, cst.Name) and _number_parameter(ctx, node.value, integers):
            return True
        if isinstance(node, cst.Name) and unpacked_size(ctx, node, env):
            return True  # `b, _, c = x.size()[:3]`: a size
        if isinstance(node, cst.Name) and not integers and _mask_parameter(ctx, node.value):
            return True  # `id_mask`: masks select, they are not differentiated
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name):
        if node.value.value == "self" and not integers:
            return _buffer_value(ctx, node.attr.value)
        return False
    if isinstance(node, cst.Name) and not integers and batch_of_training_loop(ctx, node, env):
        return True  # `for pts, y in loader: ... loss.backward()`: a batch of data
    if isinstance(node, cst.Name) and not integers:
        source = unpacking_call(ctx, node, env)  # `vals, idx = torch.unique(x, ...)`
        if source is not None and isinstance(source.node, cst.Call):
            return no_gradient(ctx, source, depth + 1)  # `v, d = torch.linalg.eigh(data)`
    if not isinstance(node, cst.Call):
        return False
    if isinstance(node.func, cst.Name) and node.func.value in _PY_NUMBERS:
        return ctx.lookup(node.func.value, env) is None and (
            not integers or node.func.value != "float"
        )
    callee = ctx.callee(node, env)
    args = [a.value for a in node.args if a.keyword is None]
    name = (callee.qualname or "").rsplit(".", 1)[-1] if callee.qualname else callee.method
    if name in NOT_DIFFERENTIABLE or name in _BOOLEAN_OPS:
        return True  # indices, rounded or boolean values
    if callee.qualname in _COUNTING and args:
        return all(sub(a) for a in args)
    if integers:
        if callee.qualname in _COUNTS or callee.method in _COUNT_METHODS:
            return True  # a count is a whole number whatever is counted
        if callee.qualname in _INTEGER_CONSTRUCTORS:
            return all(_size_like(a) or sub(a) for a in args)
        if callee.qualname in CONSTRUCTORS or callee.method in ("mean", "sqrt", "div", "exp"):
            return False
    elif callee.qualname in CONSTRUCTORS:
        return True
    if callee.qualname in _COMBINERS:
        return all(sub(a) for a in args)
    if (_torch_function(callee.qualname) and args) or (
        not integers and _of_arguments(ctx, node, env)
    ):
        # `torch.matmul(rot, ca - t)`, `torch.norm(v, dim=-1)`, and `eig.gevd(a, b)` of a
        # function of this project that makes its results from its arguments: a function of
        # data is data
        tensors = [
            a.value
            for a in node.args
            if a.keyword is None or (a.keyword.value not in _OPTION_KEYWORDS)
        ]
        if any(a.keyword is not None and a.keyword.value == "requires_grad" for a in node.args):
            return False
        return bool(tensors) and all(sub(a) for a in tensors)
    if callee.method in ("detach", "size", "numel", "dim"):
        return True
    if callee.method == "requires_grad_":
        return bool(args) and isinstance(args[0], cst.Name) and args[0].value == "False"
    if not integers and _own_call(node) and detached_result(ctx, node):
        return True  # `g = self.get_grad(x)` of a method returning `x.grad.detach()`
    if callee.method is not None and callee.receiver is not None:
        if callee.method in _SHAPE_METHODS:
            return sub(callee.receiver)  # arguments are sizes, dims, dtypes or devices
        return sub(callee.receiver) and all(sub(a) for a in args)
    return False


def _comprehension_without_gradient(ctx: Context, comp: Value, depth: int) -> bool:
    """Every element of a comprehension is built without gradient: each iterable has none
    (`x.shape[-2:]`, `range(k)`), so neither have its targets, and the element has none
    with them."""
    node = comp.node
    assert isinstance(node, (cst.ListComp, cst.GeneratorExp))
    inner = dict(comp.env)
    for_in: cst.CompFor | None = node.for_in
    while for_in is not None:
        if not no_gradient(ctx, Value(for_in.iter, inner), depth):
            return False
        for target in descendants(for_in.target):
            if isinstance(target, cst.Name):  # a number without gradient, for this question
                inner[target.value] = Binding(cst.Integer("0"), comp.env)
        for_in = for_in.inner_for_in
    return no_gradient(ctx, Value(node.elt, inner), depth)


def _own_call(node: cst.Call) -> bool:
    """`helper(x)` or `self.method(x)`: a call that may be of this project's own code."""
    func = node.func
    if isinstance(func, cst.Name):
        return True
    return (
        isinstance(func, cst.Attribute)
        and isinstance(func.value, cst.Name)
        and func.value.value == "self"
    )


def rounded_here(ctx: Context) -> bool:
    """The value being visited is rounded to a whole number right away, through arithmetic
    (`torch.round(torch.exp(d) - 1)`, `(torch.log(n / k) * s).long()`): its small digits are
    discarded, and no gradient flows back through the rounding."""
    for parent in ctx.ancestors():
        if isinstance(parent, cst.Call):
            callee = ctx.callee(parent)
            name = callee.method or (callee.qualname or "").rsplit(".", 1)[-1]
            return name in ROUNDING
        if not isinstance(parent, (cst.Arg, cst.Attribute, cst.BinaryOperation)):
            return False
    return False


def batch_of_training_loop(ctx: Context, name: cst.Name, env: Env) -> bool:
    """`name` is what an enclosing training loop draws (`for pts, y in loader:`, also through
    `enumerate`), unchanged since: a loop whose body calls `backward()` iterates over batches
    of data, which carry no gradient. A loop over `range(...)` draws step numbers."""
    found = ctx.deref(Value(name, env))
    if found.node is not name or found.mutations:
        return False  # assigned or changed since the loop drew it (`x.requires_grad_()`)
    for parent in ctx.ancestors():
        if isinstance(parent, (cst.FunctionDef, cst.ClassDef)):
            return False
        if not isinstance(parent, cst.For):
            continue
        targets = {n.value for n in descendants(parent.target) if isinstance(n, cst.Name)}
        if name.value not in targets:
            continue
        if not isinstance(parent.iter, (cst.Name, cst.Attribute, cst.Call)):
            return False  # `for x in (a, b)`: the code's own values
        if isinstance(parent.iter, cst.Call) and _not_batches(call_name(parent.iter)):
            return False
        cache = ctx.shared.setdefault("training_loops", {})
        trains = cache.get(id(parent))
        if trains is None:
            trains = cache[id(parent)] = any(
                isinstance(n, cst.Call)
                and isinstance(n.func, cst.Attribute)
                and n.func.attr.value == "backward"
                for n in descendants(parent.body)
            )
        return trains
    return False


def _not_batches(called: str) -> bool:
    """`range(n)` draws step numbers, `model.parameters()` and its kind the model's own
    tensors."""
    return called == "range" or called.endswith(("parameters", "modules", "children", "buffers"))


def _size_like(node: cst.BaseExpression) -> bool:
    """A bound of `torch.arange` written from names and whole numbers (`n`, `-n + 1`,
    `2 * self.size - 1`): a size, whole like the range it bounds."""
    if isinstance(node, (cst.Name, cst.Attribute, cst.Integer)):
        return True
    if isinstance(node, cst.UnaryOperation):
        return _size_like(node.expression)
    return (
        isinstance(node, cst.BinaryOperation)
        and isinstance(node.operator, _INTEGER_OPS)
        and _size_like(node.left)
        and _size_like(node.right)
    )


_MASK_PARAMETER = re.compile(r"(^|_)masks?$")
#: Parameters that hold a batch of input data: what is read from them by key is data.
_BATCH_PARAMETER = re.compile(
    r"^(feats|features|feat_dict|batch|batch_dict|data|data_dict|inputs?|input_dict|samples?"
    r"|targets?|gts?|ground_truths?|labels|examples?)$"
)


def _input_batch_entry(ctx: Context, node: cst.Subscript) -> bool:
    """`feats["template_ca"]`: an entry, read by a string key, of a parameter named as a batch
    of input data (`feats`, `batch`, `inputs`, `targets`). Data needs no gradient; the outputs
    of a model are held in other names (`outputs["pred_boxes"]`)."""
    if not isinstance(node.value, cst.Name) or len(node.slice) != 1:
        return False
    index = node.slice[0].slice
    if not isinstance(index, cst.Index) or not isinstance(index.value, cst.SimpleString):
        return False
    name = node.value.value
    return bool(_BATCH_PARAMETER.match(name)) and ctx.parameter(name) is not None


def _mask_parameter(ctx: Context, name: str) -> bool:
    """A parameter of the enclosing function named as a mask (`mask`, `prediction_mask`)."""
    return bool(_MASK_PARAMETER.search(name)) and ctx.parameter(name) is not None


def _number_parameter(ctx: Context, name: str, integers: bool) -> bool:
    """A parameter of the enclosing function annotated as a Python number (`factor: int`)."""
    param = ctx.parameter(name)
    if param is None:
        return False
    if param.annotation is None:  # `r_min=0.`: a number unless the caller passes a tensor
        default = param.default
        if isinstance(default, cst.UnaryOperation):
            default = default.expression
        return isinstance(default, cst.Integer) or (not integers and isinstance(default, cst.Float))
    ann = param.annotation.annotation
    kinds = ("int",) if integers else ("int", "float", "bool")
    return isinstance(ann, cst.Name) and ann.value in kinds


_SHAPE_METHODS = TRANSPARENT_METHODS | {"repeat", "repeat_interleave", "tile", "sign", "abs"}


def _buffer_value(ctx: Context, attr: str) -> bool:
    """`self.<attr>` is a buffer of the module (`self.register_buffer("attr", ...)`, which
    never requires a gradient) or a property computed from buffers only. Read from the
    file's CPython tree: the function being linted may be all that was parsed of the class."""
    cls = ctx.class_scope
    if cls is None or ctx.syntax is None:
        return False
    return attr in _buffers(ctx, cls.node.name.value)  # type: ignore[attr-defined]


def _buffers(ctx: Context, name: str) -> frozenset[str]:
    """The buffers of class `name` and its properties computed from buffers only."""
    cache = ctx.shared.setdefault("class_buffers", {})
    found = cache.get(name)
    if found is None:
        tree = ctx.class_tree(name)
        found = cache[name] = _class_buffers(tree) if tree is not None else frozenset()
    return found  # type: ignore[no-any-return]


def _class_buffers(cls: ast.ClassDef) -> frozenset[str]:
    buffers = {
        n.args[0].value
        for n in ast.walk(cls)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "register_buffer"
        and n.args
        and isinstance(n.args[0], ast.Constant)
        and isinstance(n.args[0].value, str)
    }
    properties = [
        f
        for f in cls.body
        if isinstance(f, ast.FunctionDef)
        and any(isinstance(d, ast.Name) and d.id == "property" for d in f.decorator_list)
    ]
    for _ in range(3):  # properties of properties
        for f in properties:
            if f.name not in buffers and _from_buffers(f, buffers):
                buffers.add(f.name)
    return frozenset(buffers)


def _from_buffers(func: ast.FunctionDef, buffers: set[str]) -> bool:
    """Every `self.x` the function reads is a buffer, and it reads no parameter."""
    reads = [
        n
        for n in ast.walk(func)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self"
    ]
    returns = [n for n in ast.walk(func) if isinstance(n, ast.Return) and n.value is not None]
    return bool(reads and returns) and all(r.attr in buffers for r in reads)


def _of_arguments(ctx: Context, node: cst.Call, env: Env) -> bool:
    """`node` calls a module-level function or staticmethod of this project that makes no
    tensor requiring grad itself (numlint.analysis.summaries.of_arguments_only)."""
    target = ctx.project_target(node, env)
    return target is not None and of_arguments_only(ctx, *target)


def gradient_free(ctx: Context, operand: cst.BaseExpression) -> bool:
    """No gradient flows here: inside `torch.no_grad()` (or a function decorated with it), or
    the operand is built only from constructors and constants (see `no_gradient`)."""
    return ctx.in_no_grad() or no_gradient(ctx, ctx.value(operand))


_RANDOM = frozenset(
    {"torch.rand", "torch.randn", "torch.randint", "torch.randperm", "torch.rand_like",
     "torch.randn_like", "torch.randint_like"}
)  # fmt: skip
_CONSTANT_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$|^(pi|e|tau|inf)$")


def constant_table(ctx: Context, value: Value, depth: int = 0) -> bool:
    """A value built only from literals, module constants (`penn.PITCH_BINS`, `math.pi`),
    parameters annotated as Python numbers (`sigma: float`) and deterministic tensor
    constructors (`torch.meshgrid(torch.arange(N), ...)`): the same on every call with the
    same settings, so a 0 in it would show on the first run. Tensor parameters, attributes
    of `self` and shapes are inputs, not constants."""
    if depth > 12:
        return False
    value = ctx.deref(value)
    node, env = value.node, value.env

    def sub(expr: cst.BaseExpression) -> bool:
        return constant_table(ctx, Value(expr, env), depth + 1)

    if isinstance(node, (cst.Integer, cst.Float)):
        return True
    if isinstance(node, cst.UnaryOperation):
        return sub(node.expression)
    if isinstance(node, cst.BinaryOperation):
        return sub(node.left) and sub(node.right)
    if isinstance(node, cst.Subscript):
        return sub(node.value)
    if isinstance(node, (cst.Tuple, cst.List)):
        return all(sub(e.value) for e in node.elements)
    if isinstance(node, cst.Attribute):
        qual = ctx.qualname(node, env)
        return qual is not None and bool(_CONSTANT_NAME.match(node.attr.value))
    if isinstance(node, cst.Name):
        if _number_parameter(ctx, node.value, integers=False):
            return True
        source = unpacking_call(ctx, node, env)  # `xx, yy = torch.meshgrid(...)`
        return source is not None and constant_table(ctx, source, depth + 1)
    if not isinstance(node, cst.Call):
        return False
    callee = ctx.callee(node, env)
    args = [
        a.value
        for a in node.args
        if a.keyword is None
        or not (
            a.keyword.value in _OPTION_KEYWORDS
            or isinstance(a.value, (cst.SimpleString, cst.Name))  # `indexing="ij"`, `True`
        )
    ]
    if callee.qualname in _RANDOM:
        return False
    if callee.qualname in CONSTRUCTORS or _torch_function(callee.qualname):
        return bool(args) and all(sub(a) for a in args)
    if isinstance(node.func, cst.Name) and node.func.value in _PY_NUMBERS:
        return ctx.lookup(node.func.value, env) is None and all(sub(a) for a in args)
    if callee.method is not None and callee.receiver is not None:
        return sub(callee.receiver) and all(sub(a) for a in args)
    return False
