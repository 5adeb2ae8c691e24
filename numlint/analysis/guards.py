"""Guards that come after the hazard: a value whose NaN / inf entries are replaced later.

`log_p = torch.log(p)` followed by `log_p = torch.where(torch.isfinite(log_p), log_p, m)`,
`x[torch.isnan(x)] = 0` or `x = x.nan_to_num()`: the author knows the value can be
non-finite and handles it (forward; a gradient can still be NaN). The guards that come
before (clamps, eps, `if n == 0: return`, `assert`) are in numlint.zeros.
"""

from __future__ import annotations

import re

import libcst as cst

from numlint.context import Context


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


def assigned_name(stmt: cst.CSTNode) -> str | None:
    """`name` for a statement `name = ...`."""
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return None
    small = stmt.body[0]
    if isinstance(small, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
        target = small.targets[0].target if isinstance(small, cst.Assign) else small.target
        if isinstance(small, cst.Assign) and len(small.targets) != 1:
            return None
        return target.value if isinstance(target, cst.Name) else None
    return None


def assigned_here(ctx: Context) -> tuple[str, list[cst.CSTNode]] | None:
    """`name = ...` for the statement being visited: the name, and the statements after it
    in the same block."""
    stmt, block = statement(ctx)
    if stmt is None or block is None:
        return None
    name = assigned_name(stmt)
    if name is None:
        return None
    return name, block[block.index(stmt) + 1 :]


def sanitised_later(ctx: Context) -> bool:
    """The value the current statement assigns has its non-finite entries replaced by one of
    the next statements of the same block."""
    here = assigned_here(ctx)
    if here is None:
        return False
    name, after = here
    n = re.escape(name)
    pattern = re.compile(
        rf"(isfinite|isnan|isinf|nan_to_num|isposinf|isneginf)\(\s*{n}\b"
        rf"|\b{n}\.(isfinite|isnan|isinf|nan_to_num_?)\("
    )
    return any(pattern.search(ctx.code(s)) for s in after[:5])
