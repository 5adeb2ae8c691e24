"""Link an incident to the static findings it confirms: those in the source of the origin
module's class (its methods, and those of the user's base classes it inherits), at every
confidence level; when the op that made the value is known, the findings on its line."""

from __future__ import annotations

import inspect
import os
from pathlib import Path
from typing import Any

from numlint.diagnostic import Diagnostic
from numlint.stress.report import LinkedFinding


def _library_dirs() -> tuple[str, ...]:
    """torch's, numlint's own and the standard library's directories: never the user's."""
    import sysconfig

    import torch

    import numlint

    dirs = [os.path.dirname(torch.__file__), os.path.dirname(numlint.__file__)]
    dirs += [sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib")]
    return tuple(os.path.realpath(d) + os.sep for d in dict.fromkeys(dirs))


class Linker:
    """Static findings per source file, linted once per stress run (every confidence level)."""

    def __init__(self) -> None:
        self._files: dict[str, tuple[list[str], list[Diagnostic]]] = {}
        self._skip = _library_dirs()

    def user_file(self, path: str | None) -> str | None:
        """The resolved path of a source file of the user's (not torch's), or None."""
        if not path or path.startswith("<"):
            return None
        real = os.path.realpath(path)
        if real.startswith(self._skip) or not os.path.isfile(real):
            return None
        return real

    def findings(self, path: str) -> tuple[list[str], list[Diagnostic]]:
        """The lines of a file and its findings at every confidence level."""
        if path not in self._files:
            try:
                source = Path(path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                source = ""
            try:
                diags = _lint(source, path) if source else []
            except Exception:  # stress must report what the model did whatever the linter does
                diags = []
            self._files[path] = (source.splitlines(), diags)
        return self._files[path]

    def classes(self, module: Any) -> list[tuple[str, str, int, int]]:
        """(file, qualname, first line, last line) of the module's class and the user's
        classes it inherits from (torch's own classes are left out)."""
        out = []
        for klass in type(module).__mro__:
            try:
                path = self.user_file(inspect.getsourcefile(klass))
                if path is None:
                    continue
                lines, start = inspect.getsourcelines(klass)
            except (TypeError, OSError):
                continue
            out.append((path, klass.__qualname__, start, start + len(lines) - 1))
        return out

    def function(self, fn: Any) -> list[tuple[str, str, int, int]]:
        """(file, qualname, first line, last line) of a loss function, or of the classes of
        a callable object (an `nn.Module` loss)."""
        fn = getattr(fn, "__func__", fn)
        if not (inspect.isfunction(fn) or inspect.ismethod(fn)):
            return self.classes(fn)
        try:
            path = self.user_file(inspect.getsourcefile(fn))
            if path is None:
                return []
            lines, start = inspect.getsourcelines(fn)
        except (TypeError, OSError):
            return []
        return [(path, fn.__qualname__, start, start + len(lines) - 1)]

    def link_function(self, fn: Any, source: str = "") -> tuple[LinkedFinding, ...]:
        """The findings in the loss function an incident of the loss confirms."""
        return self._link(self.function(fn), source)

    def link(self, module: Any, source: str = "") -> tuple[LinkedFinding, ...]:
        """The findings an incident whose origin is `module` confirms. `source`: the
        `path:line` of the op that made the value, when the monitor named it."""
        return self._link(self.classes(module) if module is not None else [], source)

    def _link(
        self, spans: list[tuple[str, str, int, int]], source: str
    ) -> tuple[LinkedFinding, ...]:
        if source:
            path, _, line = source.rpartition(":")
            real = self.user_file(path)
            if real is not None and line.isdigit():
                lines, diags = self.findings(real)
                row = int(line)
                on_line = [d for d in diags if d.row <= row <= d.end_row]
                if on_line:
                    return tuple(_linked(d, real, lines) for d in on_line)
        out: list[LinkedFinding] = []
        for path, _, first, last in spans:
            lines, diags = self.findings(path)
            out += [_linked(d, path, lines) for d in diags if first <= d.row <= last]
        return tuple(dict.fromkeys(out))


def _lint(source: str, path: str) -> list[Diagnostic]:
    """The file's findings under its own configuration, every confidence level shown."""
    from numlint import api

    try:
        cfg = api.resolve_config(None, path, {"min_confidence": "low"})
    except ValueError:  # a broken configuration file: the defaults
        cfg = api.resolve_config({"min-confidence": "low"}, path)
    return [d for d in api.check_source(source, path, cfg) if d.code != "NUM000"]


def _linked(d: Diagnostic, path: str, lines: list[str]) -> LinkedFinding:
    text = lines[d.row - 1].strip() if 0 < d.row <= len(lines) else ""
    return LinkedFinding(d.code, d.name, d.message, path, d.row, d.column, d.confidence, text)
