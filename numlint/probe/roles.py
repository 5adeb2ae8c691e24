"""What each free name of a probed expression must be: a tensor, a dim, a target, a mask.

Decided from where the name is used (`softmax(x, d)` makes `d` a dim, `cross_entropy(z, t)`
makes `t` class indices); nothing is evaluated. Torch-free.
"""

from __future__ import annotations

import ast

from numlint.probe.whitelist import Expression

TENSOR, DIM, FLAG, TARGET, LABEL, MASK, SIZE, INDEX, POSITIONS, EXPONENT = (
    "tensor", "dim", "flag", "target", "label", "mask", "size", "index", "positions",
    "exponent",
)  # fmt: skip
#: Roles whose samples do not get gradients (only TENSOR inputs are differentiated).
NO_GRAD = frozenset({DIM, FLAG, TARGET, LABEL, MASK, SIZE, INDEX, POSITIONS, EXPONENT})
#: Positional index of an index tensor argument, function form (the method form is one less).
_INDEX_POSITION = {"gather": 2, "take_along_dim": 1, "index_select": 2}
#: Creation functions whose leading positional arguments are sizes.
_CREATION = {"zeros", "ones", "rand", "randn", "full", "empty", "eye", "arange", "linspace"}

#: Positional index of the `dim` argument, function form (the method form is one less).
_DIM_POSITION = {
    **dict.fromkeys(
        """
        softmax log_softmax softmin logsumexp sum mean var std amax amin cumsum cumprod prod
        argmax argmin squeeze unsqueeze count_nonzero median nansum nanmean logcumsumexp
        var_mean std_mean gumbel_softmax
        """.split(),
        1,
    ),
    "cosine_similarity": 2,
    "normalize": 2,
}
_DIM_KEYWORDS = {"dim", "axis", "start_dim", "end_dim", "dim0", "dim1"}
#: Losses whose second argument is class indices.
_CLASS_TARGETS = {"cross_entropy", "nll_loss", "CrossEntropyLoss", "NLLLoss"}
#: Losses whose second argument is a floating target (labels, a distribution).
_FLOAT_TARGETS = {
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "mse_loss",
    "l1_loss", "smooth_l1_loss", "huber_loss", "poisson_nll_loss", "gaussian_nll_loss",
    "soft_margin_loss", "BCELoss", "BCEWithLogitsLoss", "KLDivLoss", "MSELoss", "L1Loss",
    "SmoothL1Loss", "HuberLoss",
}  # fmt: skip
_MASK_POSITION = {"where": 0, "masked_fill": 1}


def _callee(expr: Expression, node: ast.Call) -> tuple[str, bool]:
    """The called function's last name, and whether it is called as a method."""
    func = node.func
    qual = expr.resolved.get(id(func), "")
    if isinstance(func, ast.Call):  # nn.CrossEntropyLoss()(z, t)
        return expr.resolved.get(id(func.func), "").rsplit(".", 1)[-1], False
    if isinstance(func, ast.Attribute) and not qual:
        in_place = func.attr.endswith("_") and not func.attr.startswith("_")
        return (func.attr[:-1] if in_place else func.attr), True
    return qual.rsplit(".", 1)[-1], False


def roles(expr: Expression) -> dict[str, str]:
    """Role of each free name of `expr`: TENSOR unless its uses say otherwise."""
    found = dict.fromkeys(expr.free, TENSOR)

    def set_role(node: ast.expr, role: str) -> None:
        if isinstance(node, ast.Name) and node.id in found:
            found[node.id] = role

    for name in exponent_names(expr.tree):
        if name in found:
            found[name] = EXPONENT  # `(1 - p) ** gamma`: a number the caller sets
    for node in ast.walk(expr.tree):
        if isinstance(node, ast.Subscript):
            index = node.slice
            set_role(index, MASK)  # x[m]: a mask (an all-true one selects every row)
            for part in index.elts if isinstance(index, ast.Tuple) else [index]:
                if isinstance(index, ast.Tuple):
                    set_role(part, POSITIONS)  # x[:, i]: integer indices
                if isinstance(part, ast.Subscript):
                    set_role(part.value, POSITIONS)  # x[pairs[:, 0]]: a tensor of indices
        if not isinstance(node, ast.Call):
            continue
        name, method = _callee(expr, node)
        target = TARGET if name in _CLASS_TARGETS else LABEL if name in _FLOAT_TARGETS else ""
        for kw in node.keywords:
            if kw.arg in _DIM_KEYWORDS:
                set_role(kw.value, DIM)
            elif kw.arg in ("keepdim", "unbiased"):
                set_role(kw.value, FLAG)
            elif kw.arg == "target" and target:
                set_role(kw.value, target)
            elif kw.arg in ("mask", "condition"):
                set_role(kw.value, MASK)
            elif kw.arg in ("weight", "pos_weight") and target:
                set_role(kw.value, LABEL)
        args = node.args
        if name in _DIM_POSITION and not isinstance(node.func, ast.Call):
            i = _DIM_POSITION[name] - (1 if method else 0)
            if 0 <= i < len(args):
                set_role(args[i], DIM)
        if target and len(args) > 1:
            set_role(args[1], target)
        if name in _CREATION and not method:
            for arg in args[:3]:
                set_role(arg, SIZE)
        if name in _INDEX_POSITION and not isinstance(node.func, ast.Call):
            i = _INDEX_POSITION[name] - (1 if method else 0)
            if 0 <= i < len(args):
                set_role(args[i], INDEX)
            for kw in node.keywords:
                if kw.arg in ("index", "indices"):
                    set_role(kw.value, INDEX)
        if name in _MASK_POSITION:
            i = _MASK_POSITION[name] - (1 if method else 0)
            if 0 <= i < len(args):
                set_role(args[i], MASK)
    return found


def exponent_names(tree: ast.AST) -> frozenset[str]:
    """Names used as a power (`x ** gamma`, `torch.pow(x, gamma)`, `x.pow(gamma)`; also
    `self.gamma`, spelt so)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        power: ast.expr | None = None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            power = node.right
        elif isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name)):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
            if name == "pow" and node.args:
                method = isinstance(node.func, ast.Attribute) and not (
                    isinstance(node.func.value, ast.Name) and node.func.value.id == "torch"
                )
                i = 0 if method else 1
                power = node.args[i] if i < len(node.args) else None
            if name == "pow":
                power = next((k.value for k in node.keywords if k.arg == "exponent"), power)
        if isinstance(power, ast.Name):
            found.add(power.id)
        elif isinstance(power, ast.Attribute) and isinstance(power.value, ast.Name):
            found.add(f"{power.value.id}.{power.attr}")  # `self.gamma`
    return frozenset(found)
