"""On-disk results cache: `.numlint_cache/`, keyed by numlint's own code, the rules and
options in force for a file, and the file's content.

A file whose status is unchanged since its findings were kept is not read again: besides
its content key, each file has a status key (path, device, inode, size, modification and
status-change times in nanoseconds, the rules) leading to its content key, as ruff's cache
keys files by their modification time. Any status change (a write, `touch`, a copy, a
checkout) falls back to hashing the content, so only a changed content is linted again.
The trade-off: a write that leaves size, inode and both times as they were goes unseen
through the status key. A file's times change on every write, at the file system's clock
granularity (nanoseconds on ext4, btrfs, APFS; a few milliseconds of clock tick in
practice), and the status-change time cannot be set back (`touch -d`, `tar`, `rsync -t`
restore the modification time only), so such a write must come within one clock tick of
the previous one. For that race, a file changed less than RACY_NS before the run began
gets no status key (as git treats "racily clean" files): it is hashed again next time.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

from numlint.diagnostic import Diagnostic, Edit, Fix

try:  # hashlib's blake2b, without loading OpenSSL (hashlib's other hashes) at start-up
    from _blake2 import blake2b
except ImportError:  # pragma: no cover
    from hashlib import blake2b

DEFAULT_DIR = ".numlint_cache"
#: A file whose modification or status-change time is this close to the start of a run (or
#: later) gets no status key: a second write within the same clock tick would leave its
#: status unchanged (see the module's documentation).
RACY_NS = 2_000_000_000


@cache
def code_fingerprint() -> str:
    """Changes whenever numlint's own source changes (a version bump is not enough in development)."""
    h = blake2b(digest_size=16)
    root = Path(__file__).resolve().parent
    for path in sorted(root.rglob("*.py")):
        st = path.stat()
        h.update(f"{path.relative_to(root)}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def key(data: bytes, rules_key: str) -> str:
    return blake2b(data + b"\0" + rules_key.encode(), digest_size=16).hexdigest()


def rules_digest(rules_key: str) -> str:
    """A short stand-in for `rules_key` in status keys."""
    return blake2b(rules_key.encode(), digest_size=8).hexdigest()


def stat_key(name: str, st: os.stat_result, rules: str) -> str:
    """The status key of the file `name` with status `st` under the rules `rules`
    (rules_digest)."""
    return (
        f"stat|{st.st_dev}|{st.st_ino}|{st.st_size}|{st.st_mtime_ns}|{st.st_ctime_ns}|{rules}|"
        f"{name}"
    )


def _now_ns() -> int:
    return time.time_ns()


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
    """One JSON file per numlint build: {file key: findings, file key|deps: signatures of
    the other files they were read from, status key: file key}. Load once, save once."""

    def __init__(self, directory: Path | str | None = None) -> None:
        self.started_ns = _now_ns()
        base = Path(directory or os.environ.get("NUMLINT_CACHE_DIR") or DEFAULT_DIR)
        self.path = base / f"results-{code_fingerprint()}.json"
        self.entries: dict[str, Any] = {}
        self.dirty = False
        try:
            self.entries = json.loads(self.path.read_bytes())
        except (OSError, ValueError):
            self.entries = {}
        if not isinstance(self.entries, dict):
            self.entries = {}
        self.used: set[str] = set()
        #: The signatures of the files findings depend on, taken once per run.
        self._signatures: dict[str, list[Any]] = {}

    def _signature(self, path: str) -> list[Any]:
        sig = self._signatures.get(path)
        if sig is None:
            sig = self._signatures[path] = _signature(path)
        return sig

    def get_by_stat(
        self, name: str, st: os.stat_result, rules: str
    ) -> tuple[str, list[Diagnostic]] | None:
        """The file key and findings of the file `name` by its status `st` (stat_key), when
        its status is the one its findings were kept with: the file is not read."""
        s = stat_key(name, st, rules)
        k = self.entries.get(s)
        if not isinstance(k, str):
            return None
        found = self.get(k, name)
        if found is None:
            return None
        self.used.add(s)
        return k, found

    def remember(self, name: str, st: os.stat_result, rules: str, k: str) -> None:
        """Lead the status `st` of the file `name` (read after `st` was taken) to its file
        key `k`, unless the file changed too shortly before the run (RACY_NS)."""
        if max(st.st_mtime_ns, st.st_ctime_ns) >= self.started_ns - RACY_NS:
            return
        s = stat_key(name, st, rules)
        self.used.add(s)
        if self.entries.get(s) != k:
            self.entries[s] = k
            self.dirty = True

    def get(self, k: str, filename: str) -> list[Diagnostic] | None:
        rows = self.entries.get(k)
        if not isinstance(rows, list):
            return None
        deps = self.entries.get(k + _DEPS)
        if deps is not None and any(self._signature(d[0]) != d for d in deps):
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
            import tempfile

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
