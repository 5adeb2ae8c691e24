"""What an imported name means, read from CPython's ast: one import table for every reader
of ast trees (the cross-function summaries and the probe's reading of user expressions),
and the names an assignment target binds. The libcst traversal resolves names the same way
in numlint.analysis.context."""

from __future__ import annotations

import ast
from collections.abc import Iterator


def parameters(args: ast.arguments) -> list[tuple[ast.arg, ast.expr | None]]:
    """A function's positional and keyword-only parameters in order, each with its default
    (None: it has none)."""
    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults))
    defaults += args.defaults
    return [
        *zip(positional, defaults, strict=True),
        *zip(args.kwonlyargs, args.kw_defaults, strict=True),
    ]


def bound_names(target: ast.expr) -> Iterator[str]:
    """The names an assignment or loop target binds (`a`, `(a, (b, *c))`)."""
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from bound_names(element)
    elif isinstance(target, ast.Starred):
        yield from bound_names(target.value)


def import_one(
    node: ast.Import | ast.ImportFrom, module: str = "", package: bool = False
) -> dict[str, str]:
    """Local name -> qualified name for one import statement. Relative imports are resolved
    against `module` (the dotted name of the importing module; `package`: it is an
    `__init__.py`), or left out when it is not known."""
    out: dict[str, str] = {}
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                out[alias.asname] = alias.name
            else:
                root = alias.name.split(".")[0]
                out[root] = root
        return out
    base = imported_module(node, module, package)
    if base is None:
        return out
    for alias in node.names:
        if alias.name != "*":
            out[alias.asname or alias.name] = f"{base}.{alias.name}" if base else alias.name
    return out


def imported_module(node: ast.ImportFrom, module: str = "", package: bool = False) -> str | None:
    """The dotted module a `from ... import` reads, relative imports resolved against
    `module` as in import_one (None: not known)."""
    base = node.module or ""
    if not node.level:
        return base
    keep = package_parts(module, node.level, package) if module else None
    if keep is None:
        return None
    return ".".join([*keep, base] if base else keep)


def package_parts(module: str, level: int, package: bool) -> list[str] | None:
    """The dotted parts of what a relative import with `level` dots starts from in `module`
    (an `__init__` when `package`): `pkg.sub.use` with `..` gives `["pkg"]`; None where the
    dots climb past the name's first part."""
    parts = module.split(".")
    drop = level - 1 if package else level
    if drop > len(parts):
        return None
    return parts[: len(parts) - drop] if drop else parts


def module_imports(tree: ast.AST, module: str = "", package: bool = False) -> dict[str, str]:
    """Local name -> qualified name for every import in a module (any nesting level)."""
    imports: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imports.update(import_one(node, module, package))
    return imports
