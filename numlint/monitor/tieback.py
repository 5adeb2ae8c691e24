"""Tie runtime events back to the static linter: the findings in the origin's source file."""

from __future__ import annotations

import inspect
import os
import threading
from typing import Any

import torch

_cache: dict[str, list[dict[str, Any]]] = {}
_lock = threading.Lock()
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))


def findings_for_file(path: str | None) -> list[dict[str, Any]]:
    """Static findings (code, location "file:line", message, confidence) of every confidence
    for one source file, cached per file.
    Empty for torch's own modules, unreadable files, or when the static side fails to load."""
    if not path or not os.path.isfile(path):
        return []
    path = os.path.abspath(path)
    if path.startswith(_TORCH_DIR + os.sep):
        return []
    with _lock:
        if path in _cache:
            return _cache[path]
    try:
        from numlint.api import check_paths, resolve_config

        # every confidence: a NaN that began in this code is the evidence a low finding lacks
        config = resolve_config(None, path, {"min_confidence": "low"})
        found = [
            {
                "code": d.code,
                "location": f"{d.filename}:{d.row}",
                "row": d.row,
                "message": d.message,
                "confidence": d.confidence,
            }
            for d in check_paths([path], config)
        ]
    except Exception:  # the monitor must keep working whatever the static side does
        found = []
    with _lock:
        _cache[path] = found
    return found


def source_file_of(module: Any) -> str | None:
    """The file that defines `module`'s class, or None (builtins, C extensions, REPL)."""
    try:
        return inspect.getsourcefile(type(module))
    except (TypeError, OSError):
        return None


def lines_of(obj: Any) -> tuple[int, int] | None:
    """The first and last line of a class's or function's source, or None."""
    try:
        lines, start = inspect.getsourcelines(obj)
    except (TypeError, OSError):
        return None
    return start, start + len(lines) - 1


def findings_for_module(module: Any) -> list[dict[str, Any]]:
    """Static findings in the source of the module's class (not elsewhere in its file)."""
    span = lines_of(type(module))
    if span is None:
        return []
    found = findings_for_file(source_file_of(module))
    return [f for f in found if span[0] <= f["row"] <= span[1]]


def enclosing_span(path: str, line: int) -> tuple[int, int] | None:
    """The lines of the innermost class or function around `path:line`, or None."""
    import ast

    try:
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
    except (OSError, SyntaxError, ValueError):
        return None
    best = None
    for node in ast.walk(tree):
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            end = node.end_lineno or node.lineno
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            if first <= line <= end and (best is None or first >= best[0]):
                best = (first, end)
    return best
