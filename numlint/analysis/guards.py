"""Guards: what keeps a value away from its bad point.

Before the hazard: an in-place edit (`p.clamp_(min=eps)`, `p[p == 0] = 1`), control flow
(`if n > 0:`, `if n == 0: return`, `assert n > 0`), a `torch.where` that selects the safe
branch. After it, a value whose NaN / inf entries are replaced later:

`log_p = torch.log(p)` followed by `log_p = torch.where(torch.isfinite(log_p), log_p, m)`,
`x[torch.isnan(x)] = 0` or `x = x.nan_to_num()`: the author knows the value can be
non-finite and handles it (forward; a gradient can still be NaN).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import libcst as cst

from numlint.analysis.context import Context, Env, Value
from numlint.analysis.ops import (
    const,
    constant_bound,
    is_zero,
    magnitude_of,
    names,
    op,
    positive_bound,
    same_code,
)
from numlint.analysis.semantics import positional, strip
from numlint.analysis.tables import TRANSPARENT_METHODS
from numlint.tree import call_name, compound_statements, descendants, exits, unparenthesized


def statement(ctx: Context) -> tuple[cst.CSTNode | None, list[cst.CSTNode] | None]:
    """The simple statement holding the node being visited, and the block it sits in."""
    stack = ctx.stack
    for i in range(len(stack) - 1, 0, -1):
        node, parent = stack[i], stack[i - 1]
        if isinstance(node, cst.SimpleStatementLine) and isinstance(
            parent, (cst.IndentedBlock, cst.Module)
        ):
            return node, list(parent.body)
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            break
    return None, None


def assigned_name(stmt: cst.CSTNode, attributes: bool = False) -> str | None:
    """`name` for a statement `name = ...` (with `attributes`, also `self.name` for
    `self.name = ...`)."""
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return None
    small = stmt.body[0]
    if isinstance(small, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
        target = small.targets[0].target if isinstance(small, cst.Assign) else small.target
        if isinstance(small, cst.Assign) and len(small.targets) != 1:
            return None
        if isinstance(target, cst.Name):
            return target.value
        if attributes and isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name):
            return f"{target.value.value}.{target.attr.value}"
    return None


def assigned_here(ctx: Context, attributes: bool = False) -> tuple[str, list[cst.CSTNode]] | None:
    """`name = ...` for the statement being visited: the name, and the statements after it
    in the same block."""
    stmt, block = statement(ctx)
    if stmt is None or block is None:
        return None
    name = assigned_name(stmt, attributes)
    if name is None:
        return None
    return name, block[block.index(stmt) + 1 :]


_NAN_HANDLERS = frozenset({"nansum", "nanmean", "nan_to_num", "nanmedian"})


_MINUS_INF = re.compile(
    r"-\s*(float\(\s*[\"']inf[\"']\s*\)|(math|np|numpy|torch)\.inf\b)|float\(\s*[\"']-inf[\"']\s*\)"
)


def beside_minus_inf(ctx: Context) -> bool:
    """The node being visited is a branch of a `torch.where` whose other branch is -inf
    (`where(keep, log(p / q), -inf)`): the author takes -inf as a value of the result."""
    stack = ctx.stack
    for i in range(len(stack) - 1, 0, -1):
        parent = stack[i - 1]
        if isinstance(parent, (cst.BinaryOperation, cst.UnaryOperation)):
            continue
        if not isinstance(parent, cst.Arg):
            return False
        call = stack[i - 2] if i >= 2 else None
        if not isinstance(call, cst.Call) or call_name(call) != "where" or len(call.args) != 3:
            return False
        branches = [a for a in call.args[1:] if a is not parent]
        return len(branches) == 1 and bool(_MINUS_INF.search(ctx.code(branches[0].value)))
    return False


def writes_minus_inf(ctx: Context) -> bool:
    """The enclosing class (or function) writes -inf values itself (`float("-inf")`,
    `-math.inf`, `x - inf`): log-space code in which -inf stands for probability 0 (an
    HMM's tables, masked scores)."""
    cls = ctx.class_scope
    scope = cls.node if cls is not None else ctx.function
    if scope is None:
        return False
    cache = ctx.shared.setdefault("writes_minus_inf", {})
    found = cache.get(id(scope))
    if found is None:
        text = _SENTINEL.sub("", ctx.code(scope))  # `best = float("-inf")` starts a search
        found = cache[id(scope)] = bool(_MINUS_INF.search(text) or _MINUS_NAME.search(text))
    return found


_MINUS_NAME = re.compile(r"-\s*inf\b")
_SENTINEL = re.compile(
    r"(?m)^\s*[\w.]+\s*=\s*(float\(\s*[\"']-inf[\"']\s*\)"
    r"|-\s*(float\(\s*[\"']inf[\"']\s*\)|(math|np|numpy|torch)\.inf|inf))\s*(#.*)?$"
)


def _inside_nan_handler(ctx: Context) -> bool:
    """The current node is inside `torch.nansum(...)`, `torch.nan_to_num(...)` or the like
    (or their method forms) within its statement: the NaN it makes is dropped there."""
    for parent in reversed(ctx.stack[:-1]):
        if isinstance(parent, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            return False
        if isinstance(parent, cst.Call) and call_name(parent) in _NAN_HANDLERS:
            return True
    return False


#: Reductions whose comparison with +-1 tests every entry of their input against it.
_EXTREMES = frozenset({"min", "max", "amin", "amax", "abs"})


def edge_tested(ctx: Context, operand: cst.BaseExpression) -> bool:
    """The function compares the operand, or its min, max or abs, with +-1 (`mask = d > 1 -
    eps`, `if torch.max(x) >= 1: raise`): the author handles the edge (a `torch.where` or
    lerp replaces those entries, or the call is refused)."""
    func = ctx.function
    if func is None:
        return False
    for node in descendants(func):
        if not isinstance(node, cst.Comparison) or len(node.comparisons) != 1:
            continue
        left, right = node.left, node.comparisons[0].comparator
        for side, bound in ((left, right), (right, left)):
            if _near_one(ctx, bound) and (
                same_code(ctx, side, operand) or _extreme_of(ctx, side, operand)
            ):
                return True
    return False


def _extreme_of(ctx: Context, side: cst.BaseExpression, operand: cst.BaseExpression) -> bool:
    """`side` is `torch.max(operand)`, `operand.abs().max()` and the like."""
    for _ in range(3):
        if not isinstance(side, cst.Call):
            return False
        o = op(ctx, side)
        if o is None or o.name not in _EXTREMES or o.input is None:
            return False
        if same_code(ctx, o.input, operand):
            return True
        side = o.input
    return False


def _near_one(ctx: Context, bound: cst.BaseExpression) -> bool:
    value = const(ctx, bound)
    if value is not None:
        return 0.9 <= abs(value) <= 1.0
    if isinstance(bound, cst.UnaryOperation):
        bound = bound.expression
    return (
        isinstance(bound, cst.BinaryOperation)
        and isinstance(bound.operator, (cst.Add, cst.Subtract))
        and any(abs(const(ctx, side) or 0) == 1.0 for side in (bound.left, bound.right))
    )


def sanitised_later(ctx: Context, nan: bool = False) -> bool:
    """The value the current statement computes is inside `torch.nansum` / `nan_to_num`, or
    the value it assigns has its non-finite entries replaced by one of the next statements
    of the same block: a finiteness test or `nan_to_num`, or entries
    overwritten with a constant (`d[..., i, i, :] = 0.0` for the diagonal of a pairwise
    difference, `d.fill_diagonal_(0)`, `d.masked_fill_(m, 0)`, `d.masked_fill(m, 0)` used in
    its place). With `nan` (a 0/0), a test for infinities alone (`r[torch.isinf(r)] = 0`)
    repairs nothing: it leaves the NaN."""
    if _inside_nan_handler(ctx):
        return True
    # also `self.mean = ...; self.mean = nan_to_num(self.mean)`
    here = assigned_here(ctx, attributes=True)
    if here is None:
        return False
    name, after = here
    n = re.escape(name)
    tests = "isfinite|isnan|nan_to_num_?" + ("" if nan else "|isinf|isposinf|isneginf")
    not_inf_only = r"(?![^\n]*isinf)" if nan else ""  # `r[torch.isinf(r)] = 0` keeps a NaN
    pattern = re.compile(
        rf"({tests})\(\s*{n}\b"
        rf"|\b{n}(\.(reshape|view|squeeze|unsqueeze|float|flatten|permute|transpose)\([^()]*\))*"
        rf"\.({tests}|fill_diagonal_|masked_fill_?|index_fill_)\("
        rf"|(?m:^\s*{n}\[{not_inf_only}[^\n]*\]\s*=\s*[-+]?(\d|float\())"
        rf"|\b{n}\[\s*{n}\s*!=\s*{n}\s*\]\s*="  # `p[p != p] = c`: NaN is not itself
    )
    for following in [after, *_after_enclosing(ctx)]:
        if any(pattern.search(ctx.code(s)) for s in following[:5]):
            return True
        if _zero_entries_replaced(ctx, name, following[:5], nan):
            return True
        if _derived_sanitised(ctx, name, following[:8]):
            return True
    return False


def inf_repaired_later(ctx: Context) -> bool:
    """The value the current statement assigns has its infinities replaced next, but not its
    NaNs (`r = a / b; r[torch.isinf(r)] = 0`): the code expects a 0 denominator, and a 0
    numerator there gives a NaN that stays."""
    if ctx.source is not None:
        spelled = ctx.shared.get("spells_isinf")
        if spelled is None:
            spelled = ctx.shared["spells_isinf"] = "isinf" in ctx.source
        if not spelled:
            return False  # the file never tests for infinities: asked once per file
        here = assigned_here(ctx, attributes=True)
        if here is None:
            return False
        n = re.escape(here[0])
        # each pattern starts with its literal text: the search scans for it as plain text
        if not re.search(rf"isinf\(\s*{n}\b", ctx.source) and not re.search(
            rf"{n}(?<!\w{n})\.isinf\(", ctx.source
        ):
            return False  # the file never tests this name for infinities
    return sanitised_later(ctx) and not sanitised_later(ctx, nan=True)


def _after_enclosing(ctx: Context, levels: int = 2) -> list[list[cst.CSTNode]]:
    """The statements after each `if`/`elif`/`with`/`try` around the statement being
    visited, innermost first, within its function: where a value each branch assigns is
    used next (`if m == "true": c = c / c.sum(-1)` ... then `c[torch.isnan(c)] = 0`)."""
    out: list[list[cst.CSTNode]] = []
    stack = ctx.stack
    for i in range(len(stack) - 1, 0, -1):
        node, parent = stack[i], stack[i - 1]
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.For, cst.While)):
            break
        if isinstance(node, cst.BaseCompoundStatement) and isinstance(
            parent, (cst.IndentedBlock, cst.Module)
        ):
            body = list(parent.body)
            out.append(body[body.index(node) + 1 :])
            if len(out) == levels:
                break
    return out


def nonfinite_replaced(ctx: Context, value: Value) -> bool:
    """An in-place edit of the value replaces its non-finite entries:
    `log_p[torch.isinf(log_p) | torch.isnan(log_p)] = 0`, `log_p.nan_to_num_(0)`,
    `log_p.masked_fill_(~torch.isfinite(log_p), 0)`, `log_p[log_p == -inf] = 0`."""
    return any(_NONFINITE_TEST.search(ctx.code(stmt)) for stmt in value.mutations)


_NONFINITE_TEST = re.compile(
    r"\b(isinf|isnan|isfinite|isneginf|nan_to_num_)\(|==\s*-\s*(float\(|(math|np|numpy|torch)\.inf)"
)


def _assigned_quotient(
    ctx: Context, operand: cst.BaseExpression
) -> tuple[str, list[cst.CSTNode], set[str]] | None:
    """For a statement `name = ...` computing a value with `operand`: the name, the
    statements after it, and the names that hold the operand's value."""
    here = assigned_here(ctx)
    wanted = names(operand) | _same_value_names(ctx, operand)
    if here is None or not wanted:
        return None
    return here[0], here[1], wanted


def replaced_by_where(ctx: Context, operand: cst.BaseExpression) -> bool:
    """The quotient is assigned to a name that one of the next statements rebinds through a
    `torch.where` testing the denominator (`s = a / n`, `s = torch.where(n > 0, s, 0)`)."""
    found = _assigned_quotient(ctx, operand)
    if found is None:
        return False
    name, after, wanted = found
    # `log(n / max_exact)` replaced where `n < max_exact`: the threshold is no operand name
    wanted = {w for w in wanted if not _threshold_ident(w.rsplit(".", 1)[-1])} or wanted
    for stmt in after[:4]:
        if _only_in_where_branches(ctx, stmt, name, wanted):
            return True  # `h = p * p.log()`, `out = out + torch.where(p > 0, h, 0)`
        if assigned_name(stmt) != name or not isinstance(stmt, cst.SimpleStatementLine):
            continue
        small = stmt.body[0]
        value = small.value if isinstance(small, cst.Assign) else None
        if isinstance(value, cst.Call) and call_name(value) == "where" and value.args:
            cond = value.args[0].value
            return name in names(value) and _tests(ctx, cond, wanted)
        if value is None or name not in names(value):
            return False
        # `v = torch.min(v, cap)`, `v = v.long()`: the same entries, still to be replaced
    return False


def returned_with_test(ctx: Context, operand: cst.BaseExpression) -> bool:
    """The quotient is returned beside a test of its denominator (`mu = s / counts`,
    `return mu, counts > eps`): the caller is handed which entries are valid."""
    found = _assigned_quotient(ctx, operand)
    if found is None:
        return False
    name, after, wanted = found
    for stmt in after:
        for node in descendants(stmt):
            if not isinstance(node, cst.Return) or not isinstance(node.value, cst.Tuple):
                continue
            parts = [e.value for e in node.value.elements]
            tests = (strip(ctx, ctx.value(p))[0].node for p in parts)  # `valid.squeeze()`
            if any(isinstance(p, cst.Name) and p.value == name for p in parts) and any(
                _tests(ctx, t, wanted) for t in tests
            ):
                return True
    return False


def _only_in_where_branches(ctx: Context, stmt: cst.CSTNode, name: str, wanted: set[str]) -> bool:
    """Every use of `name` in the statement is a branch of a `where` whose condition tests
    the operand (`torch.where(t > 1, stirling, 0)`): the entries it would spoil are dropped."""
    uses = [n for n in descendants(stmt) if isinstance(n, cst.Name) and n.value == name]
    if not uses:
        return False
    covered = 0
    for call in descendants(stmt):
        if not isinstance(call, cst.Call) or call_name(call) != "where" or len(call.args) != 3:
            continue
        cond = strip(ctx, ctx.value(call.args[0].value))[0].node
        if not _tests(ctx, cond, wanted) and not _tests(ctx, call.args[0].value, wanted):
            continue
        for arg in call.args[1:]:
            covered += sum(
                1 for n in descendants(arg.value) if isinstance(n, cst.Name) and n.value == name
            )
    return covered == len(uses)


def _zero_entries_replaced(
    ctx: Context, name: str, after: Sequence[cst.CSTNode], nan: bool = False
) -> bool:
    """`score[den == 0] = ...`, or `zeros = den == 0; score[zeros] = torch.where(...)`: the
    entries where the denominator was 0 are overwritten (with `nan`, not by a test for
    infinities alone, which leaves 0/0)."""
    tests: set[str] = set()
    n = re.escape(name)
    for stmt in after:
        code = ctx.code(stmt)
        target = assigned_name(stmt)
        if target is not None and re.search(r"==\s*0(\.0*)?\b", code):
            tests.add(target)  # `denom_zeros = denom == 0`
        found = re.match(rf"\s*{n}\[([^\n]*?)\]\s*=[^=]", code)
        if found is None:
            continue
        index = found.group(1)
        infinite = r"|-?\s*(np|numpy|math|torch)\.inf\b" if not nan else ""
        if re.search(
            rf"==\s*(0(\.0*)?\b{infinite})|isnan|isfinite" + ("" if nan else "|isinf"), index
        ):
            return True  # `d[d == 0] = ...`, `log_det[log_det == -np.inf] = floor`
        if set(_WORD.findall(index)) & tests:
            return True
    return False


def _derived_sanitised(ctx: Context, name: str, after: Sequence[cst.CSTNode]) -> bool:
    """A value computed from `name` in the next statements goes through `nan_to_num` or a
    NaN test (`v = normalize(x * m + mean); s, v = map(nan_to_num, (s, v))`,
    `s = w * r; s = torch.where(torch.isnan(s), 0, s)`)."""
    tracked = {name}
    for stmt in after:
        code = ctx.code(stmt)
        names = set(_WORD.findall(code))
        if not names & tracked:
            continue
        for call in _NAN_HANDLING.finditer(code):
            if set(_WORD.findall(call.group(1))) & tracked:
                return True
        if any(m.group(1) in tracked for m in _NAN_METHOD.finditer(code)):
            return True  # `m0, m1 = m0.nan_to_num(), m1.nan_to_num()`
        target = assigned_name(stmt)
        if target is not None:
            tracked.add(target)
    return False


_WORD = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
#: A call that replaces or tests NaN entries, and the rest of its line.
_NAN_HANDLING = re.compile(r"\b(?:nan_to_num_?|isnan|isfinite)\b(.*)")
#: The receiver of a method that replaces or tests NaN entries (`m0.nan_to_num()`).
_NAN_METHOD = re.compile(r"\b([A-Za-z_][A-Za-z_0-9]*)\s*\.\s*(?:nan_to_num_?|isnan|isfinite)\b")


_GUARD_METHODS = frozenset({"clamp_", "clamp_min_", "clip_", "add_", "masked_fill_"})


def guarded_by_mutation(ctx: Context, value: Value) -> bool:
    """An in-place edit since the assignment that keeps the value away from 0.

    `p[p < eps] = eps`, `p[p == 0] = 1`, `p += eps`, `p.clamp_(min=eps)`, `p.add_(eps)`,
    `p.masked_fill_(p == 0, 1)`. A write of part of the value selected by a test of other
    values (`ns[labels == k] = 1`) is not one: see _reaches_zeros.
    """
    for stmt in value.mutations:
        if isinstance(stmt, cst.Assign) and positive_bound(ctx, stmt.value, value.env):
            target = stmt.targets[0].target
            if not isinstance(target, cst.Subscript) or _selects_own(ctx, target, value):
                return True
            continue  # `ns[labels == k] = 1`: other entries keep their zeros
        if isinstance(stmt, cst.AugAssign) and isinstance(stmt.operator, cst.AddAssign):
            if positive_bound(ctx, stmt.value, value.env):
                return True
        if isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call):
            call = stmt.value
            method = call.func.attr.value if isinstance(call.func, cst.Attribute) else ""
            if method not in _GUARD_METHODS or isinstance(call.func.value, cst.Subscript):  # type: ignore[union-attr]
                continue  # `p[:, 0].clamp_(min=eps)` guards a part of p only
            if method == "masked_fill_":
                bound = positional(call, 1, "value")
                where = positional(call, 0, "mask")
                if where is not None and not _reaches_zeros(ctx, where, call.func.value, value):  # type: ignore[union-attr]
                    continue
            elif method == "add_":
                bound = positional(call, 0, "other")
            else:
                bound = positional(call, 0, "min")
            if positive_bound(ctx, bound, value.env):
                return True
    return False


def _selects_own(ctx: Context, target: cst.Subscript, value: Value) -> bool:
    """A write into `target` that can reach the value's zeros: anything but entries that a
    test of other values picks (see _reaches_zeros)."""
    if len(target.slice) != 1 or not isinstance(target.slice[0].slice, cst.Index):
        return True
    return _reaches_zeros(ctx, target.slice[0].slice.value, target.value, value)


def _reaches_zeros(
    ctx: Context, selector: cst.BaseExpression, receiver: cst.BaseExpression, value: Value
) -> bool:
    """Whether a write through `selector` (an index or a mask) can reach the value's zeros:
    yes unless it is a test (a comparison) of values the value is not made of. `p[p < eps]`,
    `d[counts == 0]` for `d = counts.float()`, `p[mask]` with `mask = p == 0`, a denominator
    `P.sum(2)` written where `S.sum(2) == 0` for `P = S**2 / ...`, and `p[0]` do; a write
    where `labels == k` leaves the other entries, and their zeros, as they were."""
    test = selector
    if isinstance(selector, cst.Name):  # `mask = p == 0`, then `p[mask] = 1`
        bound = ctx.lookup(selector.value, value.env) or ctx.lookup(selector.value)
        if bound is not None and bound.value is not None:
            test = bound.value
    if not any(isinstance(n, cst.Comparison) for n in descendants(test)):
        return True
    picked = _local_names(ctx, test, value.env)
    own = _local_names(ctx, receiver, value.env) | _local_names(ctx, value.node, value.env)
    frontier = set(own)
    for _ in range(3):  # what the value is made of, three assignments back
        found: set[str] = set()
        for name in frontier:
            bound = ctx.lookup(name, value.env) or ctx.lookup(name)
            if bound is not None and bound.value is not None:
                found |= _local_names(ctx, bound.value, bound.env)
        frontier = found - own
        own |= found
    return bool(own & picked)


def _local_names(ctx: Context, node: cst.CSTNode, env: Env) -> set[str]:
    """The names in `node` that the function binds (its variables and parameters)."""
    return {
        n
        for n in names(node)
        if "." not in n and (ctx.lookup(n, env) is not None or ctx.lookup(n) is not None)
    }


def floored_by_mutation(ctx: Context, value: Value, part: str | None = None) -> bool:
    """The last in-place edit of the value (of `part` of it, `d[:, k]`, when given) clamps it
    at 0 (`x.clamp_(0, None)`, `x.clamp_(min=0)`, `x.clamp_min_(0)`, `x.relu_()`): entries
    that were negative are now exactly 0, all of them if every one was (a column redrawn
    with `normal_()` and clamped)."""
    last = None
    for stmt in value.mutations:
        receiver = _edited(stmt)
        if receiver is None:
            continue
        whole = not isinstance(receiver, cst.Subscript)
        if whole or (part is not None and ctx.code(receiver) == part):
            last = stmt
    if last is None or not isinstance(last, cst.Expr) or not isinstance(last.value, cst.Call):
        return False
    call = last.value
    method = call.func.attr.value if isinstance(call.func, cst.Attribute) else ""
    if method == "relu_" and not call.args:
        return True
    if method in ("clamp_", "clip_", "clamp_min_"):
        bound = positional(call, 0, "min")
        return bound is not None and is_zero(ctx, bound, value.env)
    return False


def _edited(stmt: cst.CSTNode) -> cst.BaseExpression | None:
    """What an in-place statement edits: the receiver of `x.clamp_(...)` (through chained
    in-place calls), the target of `x[...] = v` or `x += v`."""
    if isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call):
        func = stmt.value.func
        target = func.value if isinstance(func, cst.Attribute) else None
        while isinstance(target, cst.Call) and isinstance(target.func, cst.Attribute):
            target = target.func.value
        return target
    if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1:
        return stmt.targets[0].target
    if isinstance(stmt, cst.AugAssign):
        return stmt.target
    return None


_ABOVE = (cst.GreaterThan, cst.GreaterThanEqual, cst.NotEqual)


_BELOW = (cst.LessThan, cst.LessThanEqual, cst.Equal)


def sanitises(
    ctx: Context,
    cond: cst.BaseExpression,
    branch: cst.BaseExpression,
    taken: bool,
    env: Env,
) -> bool:
    """Whether `cond` keeps `branch` away from 0 when the branch is selected.

    `torch.where(x > 0, x, 1)`: the true branch is only used where x > 0; also through a
    name bound to the test, `~`, and a conjunct (`keep = (d2 <= c) & (d2 > tiny)`).
    """
    for _ in range(4):
        if not isinstance(cond, cst.Name):
            break
        bound = ctx.deref(Value(cond, env))
        if bound.node is cond:
            break
        cond, env = bound.node, bound.env
    if isinstance(cond, cst.UnaryOperation) and isinstance(cond.operator, (cst.BitInvert, cst.Not)):
        return sanitises(ctx, cond.expression, branch, not taken, env)
    both = (cst.BitAnd, cst.And) if taken else (cst.BitOr, cst.Or)  # every part holds
    if isinstance(cond, (cst.BinaryOperation, cst.BooleanOperation)) and isinstance(
        cond.operator, both
    ):
        return sanitises(ctx, cond.left, branch, taken, env) or sanitises(
            ctx, cond.right, branch, taken, env
        )
    if not isinstance(cond, cst.Comparison) or len(cond.comparisons) != 1:
        return False
    target = cond.comparisons[0]
    subject, bound = cond.left, target.comparator
    operator = target.operator
    flipped = False
    if not same_code(ctx, subject, branch):
        if not same_code(ctx, bound, branch):
            return False
        subject, bound, flipped = bound, subject, True
    low = const(ctx, bound, env)
    if low is None and isinstance(bound, (cst.Name, cst.Attribute)):
        strict = cst.LessThan if flipped else cst.GreaterThan
        if isinstance(operator, strict):
            low = 0.0  # `lam > thr`: a named threshold, taken as >= 0 like a named eps
    if low is None or low < 0:
        return False
    above = isinstance(operator, _ABOVE) if not flipped else isinstance(operator, _BELOW[:2])
    if isinstance(operator, cst.GreaterThanEqual) and low == 0 and not flipped:
        above = False
    return above == taken


@dataclass(frozen=True)
class Selection:
    """A hazardous operation inside a branch of `torch.where` (or multiplied by a mask)."""

    kind: str  # "where" | "mask"
    call: cst.CSTNode  # the where call or the multiplication
    condition: cst.BaseExpression
    taken: bool  # which branch (for "where")
    where_func: str = ""


def _pairs(stack: list[cst.CSTNode]) -> Iterator[tuple[cst.CSTNode, cst.CSTNode]]:
    """(ancestor, its child on the path) from the innermost outwards."""
    for i in range(len(stack) - 2, -1, -1):
        yield stack[i], stack[i + 1]


def selection(ctx: Context, operand: cst.BaseExpression) -> Selection | None:
    """The `torch.where` / mask multiplication that selects around the current node.

    Only when the condition mentions a name of `operand` (the value that can be invalid):
    `torch.where(x > 0, torch.log(x), 0)`, `torch.log(x) * (x > 0)`.
    """
    wanted = names(operand)
    if not wanted:
        return None
    for parent, child in _pairs(ctx.stack):
        if isinstance(parent, (cst.FunctionDef, cst.Lambda, cst.SimpleStatementLine)):
            return None
        if isinstance(parent, cst.Call):
            o = op(ctx, parent)
            if o is None or o.name != "where":
                continue
            if o.spelling == "function":
                cond = positional(parent, 0, "condition")
                args = [a for a in parent.args if a.keyword is None]
                if cond is None or len(args) < 3 or child is args[0]:
                    continue
                taken = child is args[1]
            else:  # `x.where(cond, other)`: x where cond holds, other elsewhere
                cond = positional(parent, 0, "condition")
                other = positional(parent, 1, "other")
                if cond is None:
                    continue
                if child is parent.func:
                    taken = True
                elif other is not None and isinstance(child, cst.Arg) and child.value is other:
                    taken = False
                else:
                    continue
            if _tests(ctx, cond, wanted):
                return Selection("where", parent, cond, taken, ctx.code(parent.func))
        if isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, cst.Multiply):
            other = parent.right if child is parent.left else parent.left
            mask = _mask_condition(ctx, other)
            if mask is not None and _tests(ctx, mask, wanted):
                return Selection("mask", parent, mask, True)
    return None


def _tests(ctx: Context, cond: cst.BaseExpression, wanted: set[str]) -> bool:
    """Whether a condition compares the operand (a name of it) with a constant bound:
    `x > 0`, `n != 0`, `d2 == 0`, `(x > 0) & m`, `x >= torch.finfo(x.dtype).tiny`."""
    if isinstance(cond, cst.BooleanOperation):
        return _tests(ctx, cond.left, wanted) or _tests(ctx, cond.right, wanted)
    if isinstance(cond, cst.BinaryOperation) and isinstance(cond.operator, (cst.BitAnd, cst.BitOr)):
        return _tests(ctx, cond.left, wanted) or _tests(ctx, cond.right, wanted)
    if isinstance(cond, cst.UnaryOperation):
        return _tests(ctx, cond.expression, wanted)
    if isinstance(cond, cst.Name):
        bound = ctx.deref(ctx.value(cond))
        if bound.node is not cond and isinstance(bound.node, cst.Comparison):
            return _tests(ctx, bound.node, wanted)
        return False
    if not isinstance(cond, cst.Comparison):
        return False
    sides = [cond.left, *(t.comparator for t in cond.comparisons)]
    for a, b in zip(sides, sides[1:], strict=False):
        for subject, bound in ((a, b), (b, a)):
            if not wanted & names(subject) or wanted & names(bound):
                continue
            if constant_bound(ctx, bound) or threshold_name(bound):
                return True  # `s2 > 0`, `s2 > self.eps_sq`: a named threshold
    return False


_THRESHOLD = re.compile(
    r"(^|_)(eps|epsilon|tol|tolerance|thr|thresh|threshold|tiny|floor)|^(min|max)(imum)?_", re.I
)


def threshold_name(bound: cst.BaseExpression) -> bool:
    """`eps_sq`, `self.tol`, `min_threshold`, `max_norm`: a name that says it is a threshold
    (a bound at or above 0: `n > self.max_norm` holds only where `n > 0`)."""
    if isinstance(bound, cst.BinaryOperation) and isinstance(bound.operator, cst.Multiply):
        # `2 * eps`, `eps * 10`: a positive multiple of a threshold
        for factor, other in ((bound.left, bound.right), (bound.right, bound.left)):
            if isinstance(factor, (cst.Integer, cst.Float)) and float(factor.value) > 0:
                return threshold_name(other)
        return False
    if not isinstance(bound, (cst.Name, cst.Attribute)):
        return False
    return _threshold_ident(bound.value if isinstance(bound, cst.Name) else bound.attr.value)


def _threshold_ident(ident: str) -> bool:
    return bool(_THRESHOLD.search(ident.lstrip("_")))


def _mask_condition(ctx: Context, expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """`(x > 0)`, `(x > 0).float()`, `(x > 0).to(x.dtype)` -> the comparison."""
    for _ in range(4):
        if isinstance(expr, cst.Comparison):
            return expr
        if isinstance(expr, cst.Call):
            callee = ctx.callee(expr)
            if callee.method in TRANSPARENT_METHODS and callee.receiver is not None:
                expr = callee.receiver
                continue
        return None
    return None


def guarded_by_condition(ctx: Context, operand: cst.BaseExpression) -> bool:
    """Whether control flow keeps `operand` away from 0 at the current node.

    `if n > 0: y = s / n`, `s / n if n != 0 else 0`, `else:` of `if n == 0:`, an earlier
    `if n == 0: return ...` (or `continue`, `raise`) and an earlier `assert n > 0` in the
    same block. Only tests comparing a name of the operand
    with a constant count.
    """
    wanted = names(operand)
    if not wanted:
        return False
    if _difference_tested(ctx, operand):
        return True  # `if mina == maxa: return ...` before `/ (maxa - mina)`
    wanted |= _same_value_names(ctx, operand)  # `n = m.sum(); if n == 0: return` ... `/ m.sum()`
    wanted |= _factor_names(ctx, operand)  # `w = mask * p`; `if mask.sum() == 0: break`
    wanted |= _summand_names(ctx, operand)  # `total = counts.sum()`; `if counts[i] == 0: continue`
    wanted |= _magnitude_names(ctx, wanted)  # `ax = torch.abs(x)` after `if abs(x) < c: return`
    if _selected_nonzero(ctx, operand) or _used_where_nonzero(ctx, wanted, operand):
        return True
    for parent, child in _enclosing(ctx):
        if isinstance(parent, (cst.If, cst.While)) and _total_tested(ctx, parent.test, operand):
            continue  # `if rms.sum() < eps: ...` ... `x / rms`: one silent row passes the test
        if isinstance(parent, (cst.If, cst.While)) and child is parent.body:
            if _nonzero_test(ctx, parent.test, wanted, True):
                return True
        elif isinstance(parent, cst.If) and child is parent.orelse:
            if _nonzero_test(ctx, parent.test, wanted, False):
                return True
        elif isinstance(parent, cst.BooleanOperation) and child is parent.right:
            # `n > 0 and s / n > tol`, `n == 0 or s / n > tol`: evaluated only past the left
            taken = isinstance(parent.operator, cst.And)
            if _nonzero_test(ctx, parent.left, wanted, taken):
                return True
        elif isinstance(parent, cst.IfExp):
            if child is parent.body and _nonzero_test(ctx, parent.test, wanted, True):
                return True
            if child is parent.orelse and _nonzero_test(ctx, parent.test, wanted, False):
                return True
        elif isinstance(parent, (cst.IndentedBlock, cst.Module)):
            flags: set[str] = set()
            for stmt in parent.body:
                if stmt is child:
                    break
                if _validity_flag_checked(stmt, wanted, flags):
                    return True  # `w, empty = split(...)`; `if empty: return`
                if (
                    isinstance(stmt, cst.If)
                    and not _total_tested(ctx, stmt.test, operand)
                    and _nonzero_test(
                        ctx, _checked_part(stmt.test, wanted, stmt.body), wanted, False
                    )
                    and (exits(stmt.body) or _rebinds(stmt.body, wanted))
                ):
                    return True  # `if n == 0: return ...` / `if n == 0: n = ones.norm()`
                if isinstance(stmt, cst.SimpleStatementLine) and any(
                    isinstance(s, cst.Assert) and _nonzero_test(ctx, s.test, wanted, True)
                    for s in stmt.body
                ):
                    return True  # `assert n > 0`
                if _indexes_minus_one(ctx, stmt, wanted):
                    return True
                if isinstance(stmt, cst.While) and _empty_rows_left(ctx, stmt.test, wanted):
                    return True  # `while len(empty) > 0: <refill>`: none is left after it
    return False


#: Totals of a tensor whose test says nothing of each entry (`min` and `amin` do).
_ENTRY_BLIND = frozenset({"sum", "mean", "max", "amax", "norm"})


def _total_tested(ctx: Context, test: cst.BaseExpression, operand: cst.BaseExpression) -> bool:
    """`test` compares a total of the tensor `operand` names (`rms.sum() < eps`,
    `rms.mean() == 0`) with a bound: the total passes while a single entry is 0."""
    if not isinstance(operand, cst.Name) or not isinstance(test, cst.Comparison):
        return False
    for side in (test.left, *(t.comparator for t in test.comparisons)):
        if isinstance(side, cst.Call) and isinstance(side.func, cst.Attribute):
            receiver = side.func.value
            if (
                side.func.attr.value in _ENTRY_BLIND
                and not side.args
                and isinstance(receiver, cst.Name)
                and receiver.value == operand.value
            ):
                return True
    return False


def branches(ctx: Context, func: cst.FunctionDef) -> list[cst.If | cst.While]:
    """The function's `if` / `elif` and `while` statements, nested ones included (read once
    per function: each of its divisions asks)."""
    cache: dict[int, list[cst.If | cst.While]] = ctx.shared.setdefault("branches", {})
    found = cache.get(id(func))
    if found is None:
        found = cache[id(func)] = [
            n for n in compound_statements(func.body) if isinstance(n, (cst.If, cst.While))
        ]
    return found


def tested_in_total(ctx: Context, operand: cst.BaseExpression) -> bool:
    """The function tests a total of the tensor `operand` names for 0 or a small bound
    (`if rms.sum() < eps: rms = ones * eps`) and divides by the tensor itself: the code
    expects a 0, and reducing the value to one number for the test shows it has several
    entries, of which one can be 0 while the total passes."""
    func = ctx.function
    if func is None or not isinstance(operand, cst.Name):
        return False
    for branch in branches(ctx, func):
        test = branch.test
        if (
            isinstance(test, cst.Comparison)
            and len(test.comparisons) == 1
            and _total_tested(ctx, test, operand)
            and operand.value in tested_small(ctx, test)
        ):
            return True
    return False


def tested_small(ctx: Context, test: cst.BaseExpression) -> set[str]:
    """Names a test finds below a bound or equal to 0 (`x < eps`, `eps > x`, `v == 0`)."""
    found: set[str] = set()
    for node in descendants(test):
        if not isinstance(node, cst.Comparison) or len(node.comparisons) != 1:
            continue
        operator, right = node.comparisons[0].operator, node.comparisons[0].comparator
        if isinstance(operator, (cst.GreaterThan, cst.GreaterThanEqual)):
            value, bound = right, node.left  # `eps > x`
        else:
            value, bound = node.left, right
        if isinstance(value, cst.BinaryOperation) or not (
            isinstance(bound, (cst.Name, cst.Attribute)) or const(ctx, bound) is not None
        ):
            continue  # `mean > b + 2 * std`: sums and bounds made of other values
        small = const(ctx, bound)
        if isinstance(operator, cst.Equal):
            if small == 0:
                found |= names(value)
        elif isinstance(operator, (cst.LessThan, cst.GreaterThan)):
            if small is None or small > 0:  # `x < 0` tests the sign, not a 0
                found |= names(value)
        elif isinstance(operator, (cst.LessThanEqual, cst.GreaterThanEqual)):
            if small is None or small >= 0:
                found |= names(value)
    return found


def _difference_tested(ctx: Context, operand: cst.BaseExpression) -> bool:
    """`a - b` where control flow shows `a != b`: an earlier `if a == b:` that exits, or an
    enclosing `if a != b:` / `if a > b:` (either order of the names)."""
    node = ctx.deref(ctx.value(operand)).node
    if not (isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Subtract)):
        return False
    if not (isinstance(node.left, cst.Name) and isinstance(node.right, cst.Name)):
        return False
    pair = {node.left.value, node.right.value}

    def compares(test: cst.BaseExpression, kinds: tuple[type, ...]) -> bool:
        if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
            return False
        target = test.comparisons[0]
        sides = (test.left, target.comparator)
        return (
            isinstance(target.operator, kinds)
            and all(isinstance(x, cst.Name) for x in sides)
            and {x.value for x in sides} == pair  # type: ignore[attr-defined]
        )

    for parent, child in _enclosing(ctx):
        if isinstance(parent, cst.If) and child is parent.body:
            if compares(parent.test, (cst.NotEqual, cst.GreaterThan, cst.LessThan)):
                return True
        elif isinstance(parent, (cst.IndentedBlock, cst.Module)):
            for stmt in parent.body:
                if stmt is child:
                    break
                if isinstance(stmt, cst.If) and compares(stmt.test, (cst.Equal,)):
                    if exits(stmt.body):
                        return True
    return False


def _checked_part(
    test: cst.BaseExpression, wanted: set[str], body: cst.BaseSuite | None = None
) -> cst.BaseExpression:
    """`not torch.compiler.is_compiling() and (n <= 0).any()` -> the test of `n`: a check
    the code makes only in some mode (eager, debug) still states the value's contract, when
    it raises (`body`). One that skips the value (`if n == 0 and self.ignore_empty:
    continue`) handles the 0 in that mode only: in the other, it reaches the division."""
    if not (isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And)):
        return test
    if body is not None and not exits(body, (cst.Raise,)):
        return test
    left, right = test.left, test.right
    if _mode_flag(left) and not wanted & names(left):
        return right
    if _mode_flag(right) and not wanted & names(right):
        return left
    return test


def _mode_flag(test: cst.BaseExpression) -> bool:
    """`flag`, `self.debug`, `not is_compiling()`: a setting, not a test of data."""
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test = test.expression
    if isinstance(test, cst.Call):
        return not test.args and isinstance(test.func, (cst.Name, cst.Attribute))
    return isinstance(test, (cst.Name, cst.Attribute))


def _empty_rows_left(ctx: Context, test: cst.BaseExpression, wanted: set[str]) -> bool:
    """A loop test that holds while some row of a wanted mask is empty: `len(none) > 0`,
    `none`, `none.numel()` with `none = torch.where(~mask.any(-1))[0]` (or
    `(mask.sum(-1) == 0).nonzero()`): the k-means repair of empty clusters."""
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        if not (
            isinstance(target.operator, (cst.GreaterThan, cst.NotEqual))
            and const(ctx, target.comparator) == 0
        ):
            return False
        test = test.left
    if isinstance(test, cst.Call) and len(test.args) == 1 and call_name(test) == "len":
        test = test.args[0].value
    elif isinstance(test, cst.Call) and isinstance(test.func, cst.Attribute) and not test.args:
        if test.func.attr.value not in _SIZES:
            return False
        test = test.func.value
    if not isinstance(test, cst.Name):
        return False
    found = strip(ctx, ctx.value(test))[0].node
    while isinstance(found, cst.Subscript) or (  # `torch.where(...)[0].tolist()`
        isinstance(found, cst.Call)
        and isinstance(found.func, cst.Attribute)
        and found.func.attr.value in ("tolist", "flatten", "squeeze", "view", "reshape")
    ):
        found = found.value if isinstance(found, cst.Subscript) else found.func.value  # type: ignore[union-attr]
    if isinstance(found, cst.Call) and call_name(found) in ("where", "nonzero", "argwhere"):
        args = found.args
        inner = args[0].value if len(args) == 1 else None
        if inner is None and isinstance(found.func, cst.Attribute) and not args:
            inner = found.func.value  # `(mask.sum(-1) == 0).nonzero()`
        return inner is not None and _empty_row_test(inner, wanted)
    return False


def _empty_row_test(test: cst.BaseExpression, wanted: set[str]) -> bool:
    """`~mask.any(d)`, `mask.sum(d) == 0`, `(mask.sum(d) == 0)` of a wanted name."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, (cst.BitInvert, cst.Not)):
        inner = test.expression
        return (
            isinstance(inner, cst.Call)
            and isinstance(inner.func, cst.Attribute)
            and inner.func.attr.value == "any"
            and bool(wanted & names(inner.func.value))
        )
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        return (
            isinstance(target.operator, cst.Equal)
            and isinstance(target.comparator, cst.Integer)
            and target.comparator.value == "0"
            and bool(wanted & names(test.left))
        )
    return False


def _validity_flag_checked(stmt: cst.CSTNode, wanted: set[str], flags: set[str]) -> bool:
    """`w, no_mass = _positive_mass(...)` then `if no_mass: return ...`: a helper returns a
    flag beside the value saying whether it can be used, and the code leaves when it says no.
    `flags` collects the names unpacked beside the operand in the statements read so far;
    an earlier `if` or `with` block is read the same way."""
    if isinstance(stmt, cst.SimpleStatementLine):
        for small in stmt.body:
            if isinstance(small, cst.Assign):
                for target in small.targets:
                    unpacked = target.target
                    if not isinstance(unpacked, (cst.Tuple, cst.List)):
                        continue
                    bound = {
                        e.value.value for e in unpacked.elements if isinstance(e.value, cst.Name)
                    }
                    if bound & wanted:
                        flags |= bound - wanted
        return False
    if isinstance(stmt, cst.If):
        tested = names(stmt.test)
        if flags and tested and tested <= flags and exits(stmt.body):
            return True
        arms = [stmt.body, stmt.orelse.body if stmt.orelse is not None else None]
    elif isinstance(stmt, cst.With):
        arms = [stmt.body]
    else:
        return False
    for arm in arms:
        if isinstance(arm, cst.IndentedBlock):
            inner: set[str] = set()
            if any(_validity_flag_checked(s, wanted, inner) for s in arm.body):
                return True
    return False


def _rebinds(body: cst.BaseSuite, wanted: set[str]) -> bool:
    """The block assigns one of `wanted` at its top level (a zero denominator replaced)."""
    statements = body.body if isinstance(body, cst.IndentedBlock) else [body]
    return any(assigned_name(stmt) in wanted for stmt in statements)


def _selected_nonzero(ctx: Context, operand: cst.BaseExpression) -> bool:
    """`r[keep]` with `keep = (r > 1e-9).reshape(-1)` (or `wrong * keep`, `wrong & keep`):
    only the entries that pass a nonzero test of the denominator itself are divided by."""
    if not isinstance(operand, cst.Subscript):
        return False
    wanted = names(operand.value)
    for element in operand.slice:
        index = element.slice
        if not isinstance(index, cst.Index):
            continue
        for part in _mask_factors(index.value):
            taken = True
            for _ in range(3):  # `t[~invalid]`, or `t[ok]` with `ok = ~invalid`
                bound = _bound_expression(ctx, part)
                if not (
                    isinstance(bound, cst.UnaryOperation)
                    and isinstance(bound.operator, cst.BitInvert)
                ):
                    break
                part, taken = bound.expression, not taken  # `invalid = t == 0`
            for factor in _mask_factors(_bound_expression(ctx, part)):  # `keep = (n > 0) & ...`
                test = _mask_condition(ctx, factor)
                if test is not None and _nonzero_test(ctx, test, wanted, taken):
                    return True
    return False


def _mask_factors(expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The masks a conjunction combines: `a * b`, `a & b` (each a mask that must hold)."""
    if isinstance(expr, cst.BinaryOperation) and isinstance(
        expr.operator, (cst.Multiply, cst.BitAnd)
    ):
        return _mask_factors(expr.left) + _mask_factors(expr.right)
    return [expr]


def _bound_expression(ctx: Context, expr: cst.BaseExpression) -> cst.BaseExpression:
    """The expression a plain name is bound to (itself otherwise)."""
    if isinstance(expr, cst.Name):
        bound = ctx.deref(ctx.value(expr)).node
        if isinstance(bound, cst.BaseExpression):
            return bound
    return expr


def _used_where_nonzero(ctx: Context, wanted: set[str], operand: cst.BaseExpression) -> bool:
    """The quotient is assigned to a name that the rest of the block only reads through a
    mask testing the denominator (`c = s / n.sum(-1)`, `ok = n.sum(-1) > 0`, `x[ok] = c[ok]`),
    or inside an `if` that tests it (`p = hits / (pred == i).sum()`, then
    `if torch.any(pred == i): out.append(p)`): the entries where it was 0 are never used."""
    here = assigned_here(ctx)
    if here is None:
        return False
    name, after = here
    n = re.escape(name)
    masks: set[str] = set()
    counted = _counted_test(ctx, operand)
    reads = 0
    for stmt in after:
        code = ctx.code(stmt)
        if isinstance(stmt, cst.If) and counted is not None and _any_of(ctx, stmt.test) == counted:
            reads += bool(re.search(rf"\b{n}\b", ctx.code(stmt.body)))
            if stmt.orelse is None or not re.search(rf"\b{n}\b", ctx.code(stmt.orelse)):
                continue
        target = assigned_name(stmt)
        if target == name and re.fullmatch(rf"\s*{n}\s*=\s*{n}\.\w+\([^()]*\)\s*", code):
            continue  # `c = c.to(boxes)`: the same value
        if target is not None and target != name and isinstance(stmt, cst.SimpleStatementLine):
            small = stmt.body[0]
            value = small.value if isinstance(small, (cst.Assign, cst.AnnAssign)) else None
            if value is not None and _nonzero_test(ctx, value, wanted, True):
                masks.add(target)
                continue
        for use in re.finditer(rf"\b{n}\b(\s*\[\s*(\w+))?", code):
            if use.group(2) not in masks:
                return False
            reads += 1
        if target == name:
            break  # rebound to something else
    return reads > 0


def _counted_test(ctx: Context, operand: cst.BaseExpression) -> str | None:
    """`torch.sum((pred == i).float())`, `(pred == i).sum()` -> the text of the test whose
    hits the denominator counts."""
    node = ctx.deref(ctx.value(operand)).node
    if not isinstance(node, cst.Call):
        return None
    callee = ctx.callee(node)
    if callee.method == "sum" and callee.receiver is not None and not node.args:
        inner = callee.receiver
    elif callee.qualname == "torch.sum" and len(node.args) == 1:
        inner = node.args[0].value
    else:
        return None
    return _test_text(ctx, inner)


def _any_of(ctx: Context, test: cst.BaseExpression) -> str | None:
    """`torch.any(c)`, `c.any()` -> the text of the test `c`."""
    if not isinstance(test, cst.Call):
        return None
    callee = ctx.callee(test)
    inner = None
    if callee.qualname == "torch.any" and len(test.args) == 1:
        inner = test.args[0].value
    elif callee.method == "any" and callee.receiver is not None and not test.args:
        inner = callee.receiver
    return _test_text(ctx, inner) if inner is not None else None


def _test_text(ctx: Context, mask: cst.BaseExpression) -> str | None:
    """The text of the comparison a 0/1 mask is made of (`(pred == i).float()` ->
    `pred == i`), without parentheses, so that two spellings of one test compare equal."""
    test = _mask_condition(ctx, mask)
    return ctx.code(unparenthesized(test)) if test is not None else None


def _factor_names(ctx: Context, operand: cst.BaseExpression) -> set[str]:
    """The names multiplied together into a name of the operand (`w = (mask * p).float()`):
    where one of them is all 0, so is the product."""
    found: set[str] = set()
    for name in names(operand):
        if "." in name:
            continue
        bound = ctx.deref(ctx.value(cst.Name(name))).node
        for _ in range(4):  # `(mask * p).to(torch.float64)`
            if isinstance(bound, cst.Call) and isinstance(bound.func, cst.Attribute):
                if bound.func.attr.value in TRANSPARENT_METHODS:
                    bound = bound.func.value
                    continue
            break
        if isinstance(bound, cst.BinaryOperation) and isinstance(bound.operator, cst.Multiply):
            found |= {
                side.value for side in (bound.left, bound.right) if isinstance(side, cst.Name)
            }
    return found


def _summand_names(ctx: Context, operand: cst.BaseExpression) -> set[str]:
    """The tensor summed whole into the operand (`total = torch.sum(counts)`): a test that an
    entry of it is nonzero (`if counts[i] == 0: continue`) keeps the sum of those counts off 0."""
    found: set[str] = set()
    bound = (_bound_expression(ctx, cst.Name(n)) for n in names(operand) if "." not in n)
    for expr in (operand, *bound):
        if not isinstance(expr, cst.Call):
            continue
        callee = ctx.callee(expr)
        if callee.method == "sum" and callee.receiver is not None and not expr.args:
            found |= names(callee.receiver)
        elif callee.qualname == "torch.sum" and len(expr.args) == 1:
            found |= names(expr.args[0].value)
    return found


def _magnitude_names(ctx: Context, wanted: set[str]) -> set[str]:
    """The names of x for each wanted name bound to a magnitude of x (`ax = torch.abs(x)`,
    `x ** 2`): zero exactly where x is, so a test of x guards it."""
    out: set[str] = set()
    for name in wanted:
        if "." in name:
            continue
        binding = ctx.lookup(name)
        if binding is None or binding.value is None:
            continue
        inner = magnitude_of(ctx, binding.value, binding.env)
        if inner is not None:
            out |= names(inner)
    return out


def _same_value_names(ctx: Context, operand: cst.BaseExpression) -> set[str]:
    """Names bound in this function to the operand's expression, written the same way."""
    if ctx.function is None or isinstance(operand, cst.Name):
        return set()
    text = ctx.code(operand)
    return {
        name
        for name, binding in ctx.env.items()
        if type(binding.value) is type(operand) and ctx.code(binding.value) == text
    }


def _indexes_minus_one(ctx: Context, stmt: cst.CSTNode, wanted: set[str]) -> bool:
    """`tau = cumsum.gather(dim, k - 1)`, `x[k - 1]` before `/ k`: the code indexes with
    k - 1, so it relies on k >= 1 (a sparsemax's support size)."""
    code = ctx.code(stmt)
    for name in wanted:
        n = re.escape(name)
        if re.search(rf"(gather|index_select|take_along_dim)\([^()]*\b{n}\s*-\s*1\b", code):
            return True
        if re.search(rf"\[[^\[\]]*\b{n}\s*-\s*1\s*\]", code):
            return True
    return False


_SIZES = frozenset({"numel", "nelement"})


def _enclosing(ctx: Context) -> Iterator[tuple[cst.CSTNode, cst.CSTNode]]:
    """(parent, child) pairs from the node being visited up to its function, lambda or
    class: the statements and branches whose tests decide whether it runs."""
    stack = ctx.stack
    for i in range(len(stack) - 2, -1, -1):
        parent, child = stack[i], stack[i + 1]
        if isinstance(parent, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return
        yield parent, child


def branch_taken(ctx: Context, test: str) -> bool | None:
    """True inside the body of an enclosing `if <test>:` (`test` as written), False inside its
    `else:`, None elsewhere (up to the enclosing function, lambda or class)."""
    for parent, child in _enclosing(ctx):
        if isinstance(parent, cst.If) and ctx.code(parent.test) == test:
            if child is parent.body:
                return True
            if child is parent.orelse:
                return False
    return None


def in_empty_branch(ctx: Context, node: cst.CSTNode) -> bool:
    """Inside `if x.numel() == 0:` (or `not x.numel()`, `len(x) == 0`, `x.shape[0] == 0`)
    where `node` uses x: every value there is empty, none can be bad."""
    used = _identifiers(node)
    for parent, child in _enclosing(ctx):
        if isinstance(parent, cst.If) and child is parent.body:
            tested = _emptiness_tested(parent.test)
            if tested is not None and tested & used:
                return True
    return False


def _identifiers(node: cst.CSTNode) -> set[str]:
    """Every plain name in an expression, `self` included."""
    return {n.value for n in descendants(node) if isinstance(n, cst.Name)}


def _emptiness_tested(test: cst.BaseExpression) -> set[str] | None:
    """The names of the tensor a test says is empty when true."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        size = test.expression
    elif (
        isinstance(test, cst.Comparison)
        and len(test.comparisons) == 1
        and isinstance(test.comparisons[0].operator, cst.Equal)
        and isinstance(test.comparisons[0].comparator, cst.Integer)
        and test.comparisons[0].comparator.value == "0"
    ):
        size = test.left
    else:
        return None
    if isinstance(size, cst.Subscript) and isinstance(size.value, cst.Attribute):
        if size.value.attr.value == "shape":  # `x.shape[0] == 0`
            return _identifiers(size.value.value)
    if isinstance(size, cst.Call) and not size.args:
        func = size.func
        if isinstance(func, cst.Attribute) and func.attr.value in _SIZES:
            return _identifiers(func.value)
    if isinstance(size, cst.Call) and isinstance(size.func, cst.Name) and size.func.value == "len":
        return _identifiers(size.args[0].value) if len(size.args) == 1 else None
    return None


#: Reductions whose truth value says the total is not 0.
_TOTALS = frozenset({"sum", "nansum", "count_nonzero", "numel"})


def _nonzero_test(
    ctx: Context, test: cst.BaseExpression, wanted: set[str], taken: bool, depth: int = 0
) -> bool:
    """Whether `test` being `taken` (True or False) implies a name in `wanted` is not 0."""
    if depth > 8:
        return False  # `done = done or ...` in a loop: a flag defined through itself
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _nonzero_test(ctx, test.expression, wanted, not taken, depth + 1)
    if isinstance(test, cst.BooleanOperation):
        both = isinstance(test.operator, cst.And) == taken  # `a and b` true: both hold
        left = _nonzero_test(ctx, test.left, wanted, taken, depth + 1)
        right = _nonzero_test(ctx, test.right, wanted, taken, depth + 1)
        if not both and not taken:  # `if n.numel() and (n <= eps).any(): raise`: an empty
            left = left or _size_test(test.left, wanted)  # `n` divides nothing
            right = right or _size_test(test.right, wanted)
        return (left or right) if both else (left and right)
    if (
        isinstance(test, cst.Call)
        and isinstance(test.func, cst.Name)
        and test.func.value == "bool"
        and len(test.args) == 1
    ):
        return _nonzero_test(ctx, test.args[0].value, wanted, taken, depth + 1)  # `bool(n > 0)`
    if isinstance(test, cst.BinaryOperation) and isinstance(test.operator, (cst.BitOr, cst.BitAnd)):
        if isinstance(test.operator, cst.BitAnd) == taken:  # `a & b` true, `a | b` false: both
            return any(
                _nonzero_test(ctx, side, wanted, taken, depth + 1)
                for side in (test.left, test.right)
            )
        return False
    if isinstance(test, cst.Name):
        bound = ctx.deref(ctx.value(test)).node
        if bound is not test and isinstance(bound, (cst.Comparison, cst.BooleanOperation)):
            if _nonzero_test(ctx, bound, wanted, taken, depth + 1):
                return True  # `ok = n > 0` ... `if ok:`
    if isinstance(test, (cst.Name, cst.Attribute)) and taken:
        return bool(wanted & names(test))  # `if n:`
    if isinstance(test, cst.Call) and ctx.callee(test).qualname == "torch.is_nonzero":
        return taken and bool(wanted & names(test))  # `x / d if torch.is_nonzero(d) else 0`
    if isinstance(test, cst.Call) and call_name(test) in _TOTALS:
        # `if not target.sum(): return` ... `/ target.sum()`: the truth of a total is `!= 0`
        return taken and bool(wanted & names(test))
    if isinstance(test, cst.Call):
        callee = ctx.callee(test)
        inner = positional(test, 0) if callee.qualname in ("torch.all", "torch.any") else None
        if callee.method in ("all", "any", "item") and callee.receiver is not None:
            inner = callee.receiver
        elif callee.method == "detach" and callee.receiver is not None and not test.args:
            inner = callee.receiver  # `bool((n <= 0).any().detach())`
        if inner is None:
            return False
        if taken and (callee.method == "any" or callee.qualname == "torch.any"):
            if _implies_wanted_mask(ctx, inner, wanted):
                return True  # `if not (sdf < 0).any(): raise` ... `/ (sdf <= 0).float().sum()`
        return _nonzero_test(ctx, inner, wanted, taken, depth + 1)
    if isinstance(test, cst.Comparison) and len(test.comparisons) > 1:
        # `if p == r == 0: return`: not taken, they are not all 0, so neither is an operand
        # that holds every one of them (`p + r` of non-negative rates)
        every = [test.left, *(c.comparator for c in test.comparisons)]
        tested = [e for e in every if const(ctx, e) is None]
        return (
            not taken
            and all(isinstance(c.operator, cst.Equal) for c in test.comparisons)
            and len(tested) < len(every)
            and all(names(e) and names(e) <= wanted for e in tested)
        )
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    target = test.comparisons[0]
    subject, bound, operator = test.left, target.comparator, target.operator
    if _count_test(ctx, subject, bound, type(operator), wanted, taken):
        return True
    if not wanted & names(subject):
        subject, bound = bound, subject
        operator = _FLIP.get(type(operator), operator)
        if not wanted & names(subject):
            return False
    if _rank_of(subject):
        return False  # `if p.dim() > 1:` tests how many axes p has, not its values
    low = const(ctx, bound)
    if low is None and threshold_name(bound):
        low = _positive_default(ctx, bound)  # `def f(d, eps=1e-10)`: `if n < eps: ... else:`
    kind = type(operator)
    if _near_positive(ctx, subject, low, kind, taken):
        return True
    if low is None and threshold_name(bound):
        # `n > eps_sq`, `if n <= self.tol: return`: a named threshold, taken as >= 0
        return (taken and kind is cst.GreaterThan) or (not taken and kind is cst.LessThanEqual)
    if low is None and not constant_bound(ctx, bound):
        return False
    low = 0.0 if low is None else low
    if taken:
        return (
            (kind is cst.GreaterThan and low >= 0)
            or (kind is cst.GreaterThanEqual and low > 0)
            or (kind is cst.NotEqual and low == 0)
        )
    return (
        (kind is cst.Equal and low == 0)
        or (kind is cst.LessThanEqual and low >= 0)
        or (kind is cst.LessThan and low > 0)
    )


def _positive_default(ctx: Context, bound: cst.BaseExpression) -> float | None:
    """The positive default of the parameter `bound` names (an eps or tolerance the
    function is given), or None."""
    if not isinstance(bound, cst.Name):
        return None
    param = ctx.parameter(bound.value)
    if param is None or param.default is None:
        return None
    value = const(ctx, param.default)
    return value if value is not None and value > 0 else None


def _rank_of(expr: cst.BaseExpression) -> bool:
    """`x.dim()`, `x.ndimension()`, `x.ndim`: a tensor's number of axes."""
    if isinstance(expr, cst.Attribute):
        return expr.attr.value == "ndim"
    return (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value in ("dim", "ndimension")
        and not expr.args
    )


def _count_test(
    ctx: Context,
    subject: cst.BaseExpression,
    bound: cst.BaseExpression,
    kind: type,
    wanted: set[str],
    taken: bool,
) -> bool:
    """A count of a test of the operand: `n_zero = (s == 0).sum()` with `if n_zero > 0:
    raise`, or `if (d > 0).sum() == d.shape[0]:` (every entry positive)."""
    counted = _counted_mask(ctx, subject)
    if counted is None or len(counted.comparisons) != 1:
        return False
    if not wanted & names(counted.left):
        return False
    mask_kind = type(counted.comparisons[0].operator)
    if const(ctx, counted.comparisons[0].comparator) != 0.0:
        return False
    if mask_kind in (cst.Equal, cst.LessThanEqual):  # a count of the bad entries
        nothing_bad = (kind is cst.Equal and taken) or (
            kind in (cst.GreaterThan, cst.NotEqual) and not taken
        )
        return nothing_bad and const(ctx, bound) == 0.0
    if mask_kind in (cst.GreaterThan, cst.NotEqual):  # a count of the good ones: all of them
        return kind is cst.Equal and taken and _size_of(bound)
    return False


def _counted_mask(ctx: Context, expr: cst.BaseExpression) -> cst.Comparison | None:
    """The comparison counted by `(x == 0).sum()`, `torch.sum(x == 0).item()`, `sum(x > 0)`,
    `int(torch.count_nonzero(x == 0))`, also through a name bound to it."""
    expr = _bound_expression(ctx, expr)
    for _ in range(4):
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name):
            if expr.func.value in ("int", "float") and len(expr.args) == 1:
                expr = expr.args[0].value
                continue
        if not isinstance(expr, cst.Call):
            return None
        callee = ctx.callee(expr)
        if callee.method == "item" and callee.receiver is not None:
            expr = callee.receiver
            continue
        if callee.method in ("sum", "count_nonzero") and callee.receiver is not None:
            inner: cst.BaseExpression | None = callee.receiver
        elif callee.qualname in ("torch.sum", "torch.count_nonzero"):
            inner = positional(expr, 0, "input")
        elif isinstance(expr.func, cst.Name) and expr.func.value == "sum" and len(expr.args) == 1:
            inner = expr.args[0].value  # the builtin, over the tensor's entries
        else:
            return None
        return _mask_condition(ctx, inner) if inner is not None else None
    return None


def _size_of(expr: cst.BaseExpression) -> bool:
    """`x.shape[0]`, `x.size(0)`, `len(x)`, `x.numel()`: a size (of any tensor)."""
    if isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Attribute):
        return expr.value.attr.value == "shape"
    if isinstance(expr, cst.Call):
        if isinstance(expr.func, cst.Attribute):
            return expr.func.attr.value in ("size", "numel", "nelement")
        return isinstance(expr.func, cst.Name) and expr.func.value == "len"
    return False


def _near_positive(
    ctx: Context, subject: cst.BaseExpression, tol: float | None, kind: type, taken: bool
) -> bool:
    """`abs(p.sum() - 1) > 1e-3` failing (or `< 1e-3` holding): the value lies within `tol`
    of a positive constant, so it is not 0."""
    if tol is None:
        return False
    close = (taken and kind in (cst.LessThan, cst.LessThanEqual)) or (
        not taken and kind in (cst.GreaterThan, cst.GreaterThanEqual)
    )
    if not close:
        return False
    o = op(ctx, subject)
    inner = o.input if o is not None and o.name == "abs" else None
    if isinstance(subject, cst.Call) and len(subject.args) == 1:
        builtin = isinstance(subject.func, cst.Name) and subject.func.value == "abs"
        if builtin or ctx.qualname(subject.func) == "math.fabs":
            inner = subject.args[0].value
    if not (isinstance(inner, cst.BinaryOperation) and isinstance(inner.operator, cst.Subtract)):
        return False
    target = const(ctx, inner.right)
    return target is not None and target - tol > 0


_IMPLIES = {
    (cst.LessThan, cst.LessThan),
    (cst.LessThan, cst.LessThanEqual),
    (cst.LessThanEqual, cst.LessThanEqual),
    (cst.GreaterThan, cst.GreaterThan),
    (cst.GreaterThan, cst.GreaterThanEqual),
    (cst.GreaterThanEqual, cst.GreaterThanEqual),
    (cst.Equal, cst.Equal),
    (cst.Equal, cst.LessThanEqual),
    (cst.Equal, cst.GreaterThanEqual),
}


def _implies_wanted_mask(ctx: Context, tested: cst.BaseExpression, wanted: set[str]) -> bool:
    """Some entry passes the tested mask (`(x < 0).any()`), and a wanted name is a mask that
    every such entry also passes (`m = (x <= 0).float()`): its sum is at least 1."""
    test = _mask_condition(ctx, _bound_expression(ctx, tested))
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    for name in wanted:
        if "." in name:
            continue
        mask = _mask_condition(ctx, _bound_expression(ctx, cst.Name(name)))
        if mask is not test and isinstance(mask, cst.Comparison) and _implies(ctx, test, mask):
            return True
    return False


def _implies(ctx: Context, first: cst.Comparison, second: cst.Comparison) -> bool:
    """`x < 0` implies `x <= 0`; `x > 1` implies `x > 0.5`: the same subject, a weaker test."""
    if len(second.comparisons) != 1 or ctx.code(first.left) != ctx.code(second.left):
        return False
    one, two = first.comparisons[0], second.comparisons[0]
    kinds = (type(one.operator), type(two.operator))
    a, b = const(ctx, one.comparator), const(ctx, two.comparator)
    if a is None or b is None:
        same = ctx.code(one.comparator) == ctx.code(two.comparator)
        return same and kinds in _IMPLIES
    if a == b:
        return kinds in _IMPLIES
    below = {cst.LessThan, cst.LessThanEqual}
    above = {cst.GreaterThan, cst.GreaterThanEqual}
    if kinds[0] in below | {cst.Equal} and kinds[1] in below:
        return a < b
    if kinds[0] in above | {cst.Equal} and kinds[1] in above:
        return a > b
    return False


def _size_test(test: cst.BaseExpression, wanted: set[str]) -> bool:
    """`n.numel()`, `len(n)`: whether the operand has entries at all."""
    if not isinstance(test, cst.Call):
        return False
    if isinstance(test.func, cst.Attribute) and test.func.attr.value in ("numel", "nelement"):
        return bool(wanted & names(test.func.value))
    if isinstance(test.func, cst.Name) and test.func.value == "len" and test.args:
        return bool(wanted & names(test.args[0].value))
    return False


_FLIP = {
    cst.GreaterThan: cst.LessThan(),
    cst.LessThan: cst.GreaterThan(),
    cst.GreaterThanEqual: cst.LessThanEqual(),
    cst.LessThanEqual: cst.GreaterThanEqual(),
}


_NONZERO_TESTS = (cst.NotEqual, cst.GreaterThan)
_ROW_REDUCTIONS = frozenset({"sum", "norm", "vector_norm", "any", "count_nonzero", "amax"})


def rows_kept_nonzero(ctx: Context, denominator: Value) -> bool:
    """A norm or sum of rows that a test kept because they are not 0:
    `f = x[x.sum(dim=1) != 0]`, then `f / f.norm(dim=1, keepdim=True)`. A row with a nonzero
    sum (or norm, or any nonzero entry) has a nonzero norm; its sum is nonzero where the
    test was on the sum itself."""
    found = ctx.deref(denominator)
    reduced = op(ctx, found.node, found.env) if isinstance(found.node, cst.Call) else None
    if (
        reduced is None
        or reduced.input is None
        or reduced.name not in ("norm", "vector_norm", "sum")
    ):
        return False
    rows = ctx.deref(Value(reduced.input, found.env))
    node = rows.node
    if not isinstance(node, cst.Subscript) or len(node.slice) != 1:
        return False
    index = node.slice[0].slice
    if not isinstance(index, cst.Index):
        return False
    test = ctx.deref(Value(index.value, rows.env)).node
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return False
    target = test.comparisons[0]
    if not isinstance(target.operator, _NONZERO_TESTS) or const(ctx, target.comparator) != 0:
        return False
    tested = op(ctx, test.left, rows.env) if isinstance(test.left, cst.Call) else None
    if tested is None or tested.input is None or tested.name not in _ROW_REDUCTIONS:
        return False
    if not same_code(ctx, tested.input, node.value):
        return False  # the test is on the rows being kept
    return reduced.name != "sum" or tested.name == "sum"
