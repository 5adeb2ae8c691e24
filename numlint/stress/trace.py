"""Which lines of the user's code ran: traced once, on the inputs as given, so a verdict can
tell a finding whose line never ran ("not reached") from one that ran without an incident.

Lines are traced with `sys.settrace` only when no other tracer (a debugger, coverage) is set;
otherwise only the functions called are recorded, with `sys.setprofile` when that is free."""

from __future__ import annotations

import sys
import threading
import types
from collections.abc import Callable
from typing import Any


class LineTrace:
    """A context manager recording, for the user's files (`user_file(path)` not None), the
    lines that ran (`lines`, when `on`) and the functions called (`functions`: (path,
    qualname))."""

    def __init__(self, user_file: Callable[[str], str | None]) -> None:
        self.user_file = user_file
        self.lines: dict[str, set[int]] = {}
        self.functions: set[tuple[str, str]] = set()
        self.on = False
        self._files: dict[str, str | None] = {}
        self._mode = ""
        self._thread = threading.get_ident()

    def _path(self, code: types.CodeType) -> str | None:
        name = code.co_filename
        if name not in self._files:
            self._files[name] = self.user_file(name)
        return self._files[name]

    def _call(self, frame: types.FrameType) -> str | None:
        path = self._path(frame.f_code)
        if path is not None:
            self.functions.add((path, getattr(frame.f_code, "co_qualname", frame.f_code.co_name)))
        return path

    def _trace(self, frame: types.FrameType, event: str, arg: Any) -> Any:
        if event != "call" or threading.get_ident() != self._thread:
            return None
        path = self._call(frame)
        if path is None:
            return None
        rows = self.lines.setdefault(path, set())
        rows.add(frame.f_lineno)

        def local(frame: types.FrameType, event: str, arg: Any) -> Any:
            if event == "line":
                rows.add(frame.f_lineno)
            return local

        return local

    def _profile(self, frame: types.FrameType, event: str, arg: Any) -> None:
        if event == "call" and threading.get_ident() == self._thread:
            self._call(frame)

    def __enter__(self) -> LineTrace:
        if sys.gettrace() is None:
            self._mode = "trace"
            self.on = True
            sys.settrace(self._trace)
        elif sys.getprofile() is None:
            self._mode = "profile"
            sys.setprofile(self._profile)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._mode == "trace":
            sys.settrace(None)
        elif self._mode == "profile":
            sys.setprofile(None)
