"""What a probe may evaluate: torch functions, tensor methods and attributes, by name.

This module never imports torch: `compile_expression` checks an expression against these
tables with the standard library's `ast`, so a checked file can be judged probeable (or
not) before anything runs. The evaluator looks names up only through these tables.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Mapping
from dataclasses import dataclass, field

_ELEMENTWISE = """
    abs acos acosh asin asinh atan atan2 atanh ceil clamp clamp_max clamp_min clip cos cosh
    deg2rad digamma div erf erfc erfinv exp exp2 expm1 floor fmod frac hypot i0 isfinite isinf
    isnan lgamma log log10 log1p log2 logaddexp logaddexp2 logit maximum minimum mul nan_to_num
    neg negative pow rad2deg reciprocal relu remainder round rsqrt sigmoid sign sin sinc sinh
    sqrt square sub add tan tanh true_divide trunc xlogy where fmax fmin heaviside lerp
    masked_fill
"""
_REDUCTIONS = """
    amax amin argmax argmin cumprod cumsum logcumsumexp logsumexp max mean median min nansum
    nanmean norm prod std std_mean sum var var_mean softmax log_softmax dist count_nonzero
    all any
"""
_SHAPES = """
    cat stack reshape squeeze unsqueeze flatten transpose permute t movedim flip roll gather
    index_select masked_select narrow chunk split diagonal tril triu broadcast_to
"""
_LINEAR_ALGEBRA = """
    matmul mm bmm mv dot outer einsum det logdet slogdet inverse cdist trace cholesky
    cosine_similarity pairwise_distance
"""
_CREATION = """
    tensor as_tensor zeros ones full arange linspace logspace eye rand randn randint
    zeros_like ones_like full_like rand_like randn_like finfo iinfo
"""

#: Functions by qualified name.
FUNCTIONS: frozenset[str] = frozenset(
    {
        *(f"torch.{n}" for n in (_ELEMENTWISE + _REDUCTIONS + _SHAPES).split()),
        *(f"torch.{n}" for n in (_LINEAR_ALGEBRA + _CREATION).split()),
        *(
            f"torch.nn.functional.{n}"
            for n in """
                softmax log_softmax softmin sigmoid logsigmoid softplus relu relu6 gelu silu elu
                leaky_relu tanh hardtanh normalize cosine_similarity pairwise_distance
                cross_entropy nll_loss binary_cross_entropy binary_cross_entropy_with_logits
                kl_div mse_loss l1_loss smooth_l1_loss huber_loss poisson_nll_loss
                gaussian_nll_loss soft_margin_loss margin_ranking_loss cosine_embedding_loss
                gumbel_softmax one_hot scaled_dot_product_attention layer_norm pad
            """.split()
        ),
        *(
            f"torch.special.{n}"
            for n in """
                entr erf erfc erfinv expit exp2 expm1 gammaln digamma i0 i0e i1 i1e log1p
                log_ndtr log_softmax logit logsumexp ndtr ndtri round sinc softmax xlog1py
                xlogy psi
            """.split()
        ),
        *(
            f"torch.linalg.{n}"
            for n in """
                norm vector_norm matrix_norm det slogdet inv solve eigh eigvalsh eig eigvals
                svd svdvals cholesky qr pinv cond matrix_rank lstsq
            """.split()
        ),
        *(f"math.{n}" for n in "log log1p log2 log10 exp expm1 sqrt pow fabs tanh".split()),
    }
)

#: Classes of parameter-free modules that may be built and called (`nn.Softmax(dim=-1)(x)`).
MODULES: frozenset[str] = frozenset(
    f"torch.nn.{n}"
    for n in """
        Softmax LogSoftmax Softmin Sigmoid LogSigmoid Softplus ReLU Tanh GELU SiLU Identity
        BCELoss BCEWithLogitsLoss CrossEntropyLoss NLLLoss KLDivLoss MSELoss L1Loss
        SmoothL1Loss HuberLoss CosineSimilarity PairwiseDistance
    """.split()
)

#: Tensor methods (called as `x.name(...)` or `torch.Tensor.name(x, ...)`). No in-place ones.
METHODS: frozenset[str] = frozenset(
    {
        *(_ELEMENTWISE + _REDUCTIONS).split(),
        *"""
            reshape squeeze unsqueeze flatten transpose permute t movedim flip roll gather
            index_select masked_select narrow chunk split diagonal tril triu view view_as
            expand expand_as contiguous detach clone float double half bfloat16 to type_as
            matmul mm bmm mv dot outer det logdet slogdet inverse trace cholesky
            size dim numel item tolist
            nansum nanmean masked_fill logical_not logical_and logical_or bool long int
            softplus entr
        """.split(),
    }
)

#: Attributes of tensors that are plain data.
TENSOR_ATTRIBUTES: frozenset[str] = frozenset(
    {"dtype", "shape", "ndim", "T", "mT", "H", "mH", "real", "data", "is_floating_point"}
)
#: Fields of `torch.finfo` / `torch.iinfo` and of torch's named-tuple results.
INFO_ATTRIBUTES: frozenset[str] = frozenset(
    {"tiny", "eps", "max", "min", "smallest_normal", "resolution", "bits"}
)
RESULT_FIELDS: frozenset[str] = frozenset(
    {
        "values", "indices", "eigenvalues", "eigenvectors", "U", "S", "Vh", "L", "Q", "R",
        "sign", "logabsdet", "solution", "mantissa", "exponent",
    }
)  # fmt: skip

#: Constants by qualified name.
CONSTANTS: frozenset[str] = frozenset(
    {
        *(
            f"torch.{n}"
            for n in """
                float16 half bfloat16 float32 float float64 double int64 long int32 int
                int16 int8 uint8 bool inf nan pi e
            """.split()
        ),
        "math.pi",
        "math.e",
        "math.inf",
        "math.nan",
        "math.tau",
    }
)

#: Functions and methods that draw random numbers.
RANDOM: frozenset[str] = frozenset(
    {"rand", "randn", "randint", "rand_like", "randn_like", "gumbel_softmax", "dropout"}
)

#: Modules whose attributes may be named (as `torch.log`, `F.softmax`, ...).
MODULE_PATHS: frozenset[str] = frozenset(
    {
        "torch",
        "torch.nn",
        "torch.nn.functional",
        "torch.special",
        "torch.linalg",
        "torch.Tensor",
        "math",
    }
)

#: Built-in functions a probe may call (on numbers and tensors only).
BUILTINS: frozenset[str] = frozenset({"float", "int", "abs", "min", "max", "bool", "pow"})

#: Aliases where torch exposes one function under another module's name.
ALIASES: Mapping[str, str] = {
    **{f"torch.arc{n}": f"torch.a{n}" for n in "cos sin tan cosh sinh tanh tan2".split()},
    "torch.absolute": "torch.abs",
    "torch.multiply": "torch.mul",
    "torch.divide": "torch.div",
    "torch.subtract": "torch.sub",
    "torch.nn.functional.tanh": "torch.tanh",
    "torch.nn.functional.sigmoid": "torch.sigmoid",
    "torch.special.expit": "torch.sigmoid",
    "torch.special.psi": "torch.digamma",
    "torch.special.gammaln": "torch.lgamma",
}

_OPERATORS = (
    ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.MatMult,
    ast.BitAnd, ast.BitOr, ast.BitXor,
)  # fmt: skip
_UNARY = (ast.USub, ast.UAdd, ast.Invert)
_COMPARE = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)


class NotProbeable(Exception):
    """The expression uses something outside the whitelist (the message says what)."""


@dataclass(frozen=True)
class Expression:
    """A checked expression: its tree, names resolved, and its free names in order."""

    text: str
    tree: ast.expr
    #: Qualified names of the name and attribute nodes that refer to torch (by node id).
    resolved: Mapping[int, str] = field(compare=False)
    free: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return ast.dump(self.tree)

    @property
    def random(self) -> bool:
        """Whether it draws random numbers (then it runs under a fixed seed)."""
        names = {q.rsplit(".", 1)[-1] for q in self.resolved.values()}
        names |= {n.attr for n in ast.walk(self.tree) if isinstance(n, ast.Attribute)}
        return bool(names & RANDOM)


def parse_expression(text: str) -> ast.expr:
    """Parse one expression (possibly spanning lines); raises NotProbeable.

    A flagged statement is reduced to the expression it computes: `x /= n` to `x / n`,
    `y = expr` and a bare expression statement to `expr`.
    """
    try:
        return ast.parse(f"(\n{text}\n)", mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        pass
    try:
        body = ast.parse(text.strip()).body
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise NotProbeable("not a single expression") from exc
    if len(body) == 1:
        stmt = body[0]
        if isinstance(stmt, ast.AugAssign):
            target = copy.deepcopy(stmt.target)
            target.ctx = ast.Load()
            return ast.BinOp(target, stmt.op, stmt.value)
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.Expr)) and stmt.value is not None:
            return stmt.value
    raise NotProbeable("not a single expression")


def canonical(qualname: str) -> str:
    """Spell a qualified name the way the tables do (`torch.nn.functional` aliases)."""
    for prefix in ("torch.nn.modules.activation.", "torch.nn.modules.loss."):
        if qualname.startswith(prefix):
            qualname = "torch.nn." + qualname[len(prefix) :]
    if qualname.startswith("torch.functional."):
        qualname = "torch." + qualname[len("torch.functional.") :]
    return ALIASES.get(qualname, qualname)


def dotted_parts(node: ast.expr) -> list[str] | None:
    """`a.b.c` -> ["a", "b", "c"]; None unless a name or an attribute chain on one."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


def _qualname(node: ast.expr, imports: Mapping[str, str], free_ok: set[str]) -> str | None:
    """The torch/math thing a dotted name refers to, or None for a value."""
    parts = dotted_parts(node)
    if parts is None:
        return None
    root = parts[0]
    if root in free_ok:
        return None
    base = imports.get(root)
    if base is None:
        if root in ("torch", "math") and root not in imports:
            base = root
        else:
            return None
    return canonical(".".join([base, *parts[1:]]))


def known(qualname: str) -> str:
    """What a qualified name is in the tables: function, module, constant, path, or ''."""
    if qualname in FUNCTIONS:
        return "function"
    if qualname in MODULES:
        return "module"
    if qualname in CONSTANTS:
        return "constant"
    if qualname in MODULE_PATHS:
        return "path"
    if qualname.startswith("torch.Tensor.") and qualname.rsplit(".", 1)[1] in METHODS:
        return "method"
    return ""


def compile_expression(
    text_or_tree: str | ast.expr, imports: Mapping[str, str] | None = None
) -> Expression:
    """Check an expression against the whitelist; raise NotProbeable naming the first problem.

    Names that are neither imports of torch/math nor whitelisted builtins are free: the
    probe binds sample values to them. Nothing is evaluated here.
    """
    imports = dict(imports or {})
    if isinstance(text_or_tree, str):
        text, tree = text_or_tree, parse_expression(text_or_tree)
    else:
        tree = text_or_tree
        text = ast.unparse(tree)
    resolved: dict[int, str] = {}
    free: list[str] = []
    size = sum(1 for _ in ast.walk(tree))
    if size > 400:
        raise NotProbeable("expression too large")

    def name_use(node: ast.expr, *, called: bool) -> None:
        """A Name or dotted Attribute chain rooted at an import, a builtin or a free name."""
        parts = dotted_parts(node)
        assert parts is not None
        root = parts[0]
        if any(p.startswith("__") for p in parts):
            raise NotProbeable(f"dunder name `{'.'.join(parts)}`")
        if root in imports or (root in ("torch", "math") and root not in free):
            qual = _qualname(node, imports, set())
            kind = known(qual or "")
            if not kind:
                raise NotProbeable(f"`{'.'.join(parts)}` ({qual}) is not a whitelisted torch name")
            if kind == "path":
                raise NotProbeable(f"`{'.'.join(parts)}` is a module, not a value")
            if kind in ("function", "module", "method") and not called:
                raise NotProbeable(f"`{'.'.join(parts)}` used as a value")
            if kind == "constant" and called:
                raise NotProbeable(f"`{'.'.join(parts)}` is not callable")
            resolved[id(node)] = qual  # type: ignore[assignment]
            return
        if len(parts) == 1 and root in BUILTINS and called:
            resolved[id(node)] = f"builtins.{root}"
            return
        if root in ("self", "cls"):
            raise NotProbeable(f"`{'.'.join(parts)}` belongs to an object, not a tensor")
        if len(parts) == 1:
            if called:
                raise NotProbeable(f"call of `{root}`, which is not a whitelisted function")
            if root not in free:
                free.append(root)
            return
        # an attribute of a value: visit as a value attribute chain
        visit_attribute(node, called=called)  # type: ignore[arg-type]

    def visit_attribute(node: ast.Attribute, *, called: bool) -> None:
        attr = node.attr
        if attr.startswith("_"):
            raise NotProbeable(f"private attribute `.{attr}`")
        if called and attr.endswith("_") and attr[:-1] in METHODS:
            attr = attr[:-1]  # `x.clamp_(...)` is probed as `x.clamp(...)`: same values
        allowed = METHODS if called else TENSOR_ATTRIBUTES | INFO_ATTRIBUTES | RESULT_FIELDS
        if attr not in allowed and not (called and attr in RESULT_FIELDS):
            what = "method" if called else "attribute"
            raise NotProbeable(f"`.{attr}` is not a whitelisted tensor {what}")
        visit(node.value)

    def visit(node: ast.expr, *, called: bool = False) -> None:
        if isinstance(node, ast.Constant):
            if not isinstance(node.value, (int, float, bool, str, type(None), type(...))):
                raise NotProbeable(f"constant {node.value!r}")
            if isinstance(node.value, str) and len(node.value) > 64:
                raise NotProbeable("long string constant")
        elif isinstance(node, ast.Name):
            name_use(node, called=called)
        elif isinstance(node, ast.Attribute):
            parts = dotted_parts(node)
            if parts is not None and (
                parts[0] in imports or (parts[0] in ("torch", "math") and parts[0] not in free)
            ):
                name_use(node, called=called)
            else:
                visit_attribute(node, called=called)
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Call):
                visit(func)  # nn.Softmax(dim=-1)(x): the evaluator checks it built a module
                inner = _qualname(func.func, imports, set(free))
                if inner is None or known(inner) != "module":
                    raise NotProbeable("call of a call that does not build a whitelisted module")
            else:
                if not isinstance(func, (ast.Name, ast.Attribute)):
                    raise NotProbeable(f"call of {type(func).__name__}")
                visit(func, called=True)
            for arg in node.args:
                if isinstance(arg, ast.Starred):
                    raise NotProbeable("`*` arguments")
                visit(arg)
            for kw in node.keywords:
                if kw.arg is None:
                    raise NotProbeable("`**` arguments")
                visit(kw.value)
        elif isinstance(node, ast.BinOp):
            if not isinstance(node.op, _OPERATORS):
                raise NotProbeable(f"operator {type(node.op).__name__}")
            visit(node.left)
            visit(node.right)
        elif isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, _UNARY):
                raise NotProbeable(f"operator {type(node.op).__name__}")
            visit(node.operand)
        elif isinstance(node, ast.Compare):
            if len(node.ops) != 1 or not isinstance(node.ops[0], _COMPARE):
                raise NotProbeable("chained or non-numeric comparison")
            visit(node.left)
            visit(node.comparators[0])
        elif isinstance(node, ast.Subscript):
            visit(node.value)
            visit(node.slice)
        elif isinstance(node, ast.Slice):
            for part in (node.lower, node.upper, node.step):
                if part is not None:
                    visit(part)
        elif isinstance(node, (ast.Tuple, ast.List)):
            for el in node.elts:
                if isinstance(el, ast.Starred):
                    raise NotProbeable("`*` in a literal")
                visit(el)
        else:
            raise NotProbeable(f"{type(node).__name__} expressions are not probed")

    visit(tree)
    return Expression(text=text, tree=tree, resolved=resolved, free=tuple(free))
