"""On-disk results cache: `.numlint_cache/`, keyed by numlint's own code, the rules and
options in force for a file, and the file's content."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

from numlint.diagnostic import Diagnostic, Edit, Fix

DEFAULT_DIR = ".numlint_cache"


@cache
def code_fingerprint() -> str:
    """Changes whenever numlint's own source changes (a version bump is not enough in development)."""
    h = hashlib.blake2b(digest_size=16)
    root = Path(__file__).resolve().parent
    for path in sorted(root.rglob("*.py")):
        st = path.stat()
        h.update(f"{path.relative_to(root)}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def key(data: bytes, rules_key: str) -> str:
    return hashlib.blake2b(data + b"\0" + rules_key.encode(), digest_size=16).hexdigest()


def _to_json(d: Diagnostic) -> list[Any]:
    fix = None
    if d.fix is not None:
        fix = [
            d.fix.applicability,
            d.fix.message,
            [[e.content, e.row, e.column, e.end_row, e.end_column] for e in d.fix.edits],
        ]
    related = [list(r) for r in d.related]
    return [
        d.code, d.name, d.message, d.row, d.column, d.end_row, d.end_column, fix,
        d.confidence, related,
    ]  # fmt: skip


def _from_json(filename: str, row: list[Any]) -> Diagnostic:
    code, name, message, r, c, er, ec, fix, confidence, related = row
    f = None
    if fix is not None:
        f = Fix(fix[0], fix[1], tuple(Edit(*e) for e in fix[2]))
    return Diagnostic(
        code, name, message, filename, r, c, er, ec, f,
        confidence=confidence, related=tuple(tuple(x) for x in related),
    )  # fmt: skip


_DEPS = "|deps"


def _signature(path: str) -> list[Any]:
    """A file's (or directory's) path, size and modification time; missing: zeros."""
    try:
        st = os.stat(path)
    except OSError:
        return [path, 0, 0]
    return [path, st.st_size, st.st_mtime_ns]


class ResultCache:
    """One JSON file per numlint build: {file key: findings}. Load once, save once."""

    def __init__(self, directory: Path | str | None = None) -> None:
        base = Path(directory or os.environ.get("NUMLINT_CACHE_DIR") or DEFAULT_DIR)
        self.path = base / f"results-{code_fingerprint()}.json"
        self.entries: dict[str, list[list[Any]]] = {}
        self.dirty = False
        try:
            self.entries = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            self.entries = {}
        self.used: set[str] = set()

    def get(self, k: str, filename: str) -> list[Diagnostic] | None:
        rows = self.entries.get(k)
        if rows is None:
            return None
        deps = self.entries.get(k + _DEPS)
        if deps is not None and any(_signature(p) != [p, *sig] for p, *sig in deps):
            return None  # another file the findings were read from has changed
        self.used.add(k)
        if deps is not None:
            self.used.add(k + _DEPS)
        return [_from_json(filename, r) for r in rows]

    def put(self, k: str, diagnostics: list[Diagnostic], dependencies: Sequence[str] = ()) -> None:
        """Keep a file's findings, and the signatures of the other files they depend on."""
        self.entries[k] = [_to_json(d) for d in diagnostics]
        self.used.add(k)
        if dependencies:
            self.entries[k + _DEPS] = [_signature(p) for p in dependencies]
            self.used.add(k + _DEPS)
        else:
            self.entries.pop(k + _DEPS, None)
        self.dirty = True

    def save(self) -> None:
        """Write atomically, keeping only entries used in this run; never fail the lint."""
        if not self.dirty and len(self.used) == len(self.entries):
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            gitignore = self.path.parent / ".gitignore"
            if not gitignore.exists():
                gitignore.write_text("*\n")
            for old in self.path.parent.glob("results-*.json"):
                if old != self.path:
                    old.unlink(missing_ok=True)
            keep = {k: v for k, v in self.entries.items() if k in self.used}
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(keep, fh, separators=(",", ":"))
            os.replace(tmp, self.path)
        except OSError:
            pass


def clean(directory: Path | str | None = None) -> bool:
    """Remove the cache directory; True when there was one."""
    import shutil

    base = Path(directory or os.environ.get("NUMLINT_CACHE_DIR") or DEFAULT_DIR)
    if base.is_dir():
        shutil.rmtree(base, ignore_errors=True)
        return True
    return False
