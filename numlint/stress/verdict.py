"""Static findings judged by a stress report: "confirmed" when an incident of the user's own
model began at the finding; "not confirmed" when its line ran, every kind of input the model and
the loss read (floats, labels, masks, token sequences) was varied by a completed run, and no
incident began there; "not reached" when its line did not run or some kind of input was never
varied (such a run says nothing of the finding, which keeps its grade). Carried on a finding as
`extra["stress"]` (no torch needed).

A report's finding matches a current one by resolved path, code and line; when the file was
edited since, by the text of its line within `SHIFT` lines of where it was."""

from __future__ import annotations

import ast
import os
from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from numlint.diagnostic import Confidence, Diagnostic
from numlint.stress.report import LinkedFinding, StressIncident, StressReport, StressReportError

#: How far (in lines) a finding may have moved since the report was written.
SHIFT = 50


#: A verdict is evidence: what the user's own model did outranks the static grade ("not
#: reached" changes nothing: a run that could not reach the value says nothing of it).
_GRADE: dict[str, Confidence] = {"confirmed": "high", "not confirmed": "low"}
#: Rules whose harm is a NaN/Inf, which a run without one refutes; a loss on the wrong input
#: (NUM3xx) gives wrong gradients, never a NaN, and keeps its grade.
_REFUTABLE = ("NUM1", "NUM2", "NUM4")


def annotate(
    diagnostics: Sequence[Diagnostic], report: StressReport, sources: dict[str, str]
) -> list[Diagnostic]:
    """Each finding the report speaks of, with `extra["stress"]` (verdict and evidence) and
    the confidence the verdict gives it (confirmed: high; not confirmed: low for a NaN/Inf
    hazard, which the run refutes)."""
    judge = _Judge(report, sources)
    out = []
    for d in diagnostics:
        verdict = judge.verdict(d)
        if verdict:
            grade = _GRADE.get(verdict["verdict"], d.confidence)
            if grade == "low" and not d.code.startswith(_REFUTABLE):
                grade = d.confidence
            d = replace(d, extra={**d.extra, "stress": verdict}, confidence=grade)
        out.append(d)
    return out


def judged(
    diagnostics: list[Diagnostic], report_path: str, sources: dict[str, str]
) -> list[Diagnostic]:
    """`annotate` with the report at `report_path`; unchanged when it cannot be read (the
    command line and the editor say why, through `cached_report`)."""
    try:
        report = cached_report(report_path)
    except StressReportError:
        return diagnostics
    return annotate(diagnostics, report, sources)


def cached_report(path: str) -> StressReport:
    """The report at `path`, read again only when the file changes; StressReportError (with
    the reason) when it cannot be used."""
    try:
        st = os.stat(path)
    except OSError:
        return StressReport.load(path)  # raises, saying why
    return _load(os.path.realpath(path), st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=8)
def _load(path: str, mtime_ns: int, size: int) -> StressReport:
    return StressReport.load(path)


def evidence(incidents: Sequence[StressIncident]) -> str:
    """`zero rows (float32, float16), large logits (float32)`."""
    by_scenario: dict[str, list[str]] = {}
    for i in incidents:
        dtypes = by_scenario.setdefault(i.scenario, [])
        if i.dtype not in dtypes:
            dtypes.append(i.dtype)
    return ", ".join(f"{s} ({', '.join(d)})" for s, d in by_scenario.items())


class _Judge:
    def __init__(self, report: StressReport, sources: dict[str, str]) -> None:
        self.report = report
        self.sources = sources
        self.lines: dict[str, list[str]] = {}
        self.trees: dict[str, ast.Module | None] = {}
        self.links: dict[tuple[str, str], list[tuple[LinkedFinding, StressIncident]]] = {}
        for incident in report.incidents:
            for f in incident.findings:
                key = (_real(f.filename), f.code)
                self.links.setdefault(key, []).append((f, incident))
        self.exercised: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
        for e in report.exercised:
            self.exercised.setdefault(_real(e.filename), []).append((e.qualname, e.modules))

    def _lines(self, d: Diagnostic) -> list[str]:
        if d.filename not in self.lines:
            text = self.sources.get(d.filename)
            if text is None:
                try:
                    text = Path(d.filename).read_text(encoding="utf-8")
                except (OSError, UnicodeDecodeError):
                    text = ""
            self.lines[d.filename] = text.splitlines()
        return self.lines[d.filename]

    def verdict(self, d: Diagnostic) -> dict[str, Any] | None:
        if d.code == "NUM000" or d.filename.startswith("<") or d.filename == "-":
            return None
        path = _real(d.filename)
        confirmed = self.confirmed(d, path)
        if confirmed:
            return {
                "verdict": "confirmed",
                "evidence": f"in your model: {evidence(confirmed)}",
                "incidents": [
                    {k: getattr(i, k) for k in ("scenario", "dtype", "phase", "module", "kind")}
                    for i in confirmed
                ],
            }
        modules = self.ran(d, path)
        if modules is None:
            return None
        report = self.report
        if report.lines is not None:
            rows = set(report.lines.get(path, ()))
            if not rows.intersection(range(d.row, max(d.row, d.end_row) + 1)):
                return {
                    "verdict": "not reached",
                    "evidence": "(its line did not run in your model on the inputs as given)",
                }
        runs = [r for r in report.runs if r.status in ("ok", "failed")]
        if not runs:
            return {"verdict": "not reached", "evidence": "(no stress run completed)"}
        unvaried = report.unvaried()
        shown = [m for m in modules if m != "<called>"] or ["a helper"]
        where = ", ".join(m if m == "a helper" else repr(m) for m in shown[:3]) + (
            ", ..." if len(shown) > 3 else ""
        )
        if unvaried:
            return {
                "verdict": "not reached",
                "evidence": f"(ran in your model as {where}, but no completed run varied its "
                f"{' or '.join(unvaried)} inputs: the value it needs may never have occurred)",
            }
        dtypes = ", ".join(report.completed_dtypes())
        varied = ", ".join(sorted(report.varied())) or "nothing"
        return {
            "verdict": "not confirmed",
            "evidence": f"(ran in your model as {where} in {len(runs)} runs: {dtypes}; "
            f"varied: {varied}; no NaN/Inf began here)",
        }

    def confirmed(self, d: Diagnostic, path: str) -> list[StressIncident]:
        candidates = self.links.get((path, d.code), [])
        if not candidates:
            return []
        lines = self._lines(d)
        here = lines[d.row - 1].strip() if 0 < d.row <= len(lines) else ""
        out: list[StressIncident] = []
        for f, incident in candidates:
            if f.row == d.row and (not f.text or f.text == here):
                out.append(incident)
            elif f.text and f.text == here and abs(f.row - d.row) <= SHIFT:
                # the file changed: accept only the nearest current line with this text
                if _nearest(lines, f.text, f.row) == d.row:
                    out.append(incident)
        return list(dict.fromkeys(out))

    def ran(self, d: Diagnostic, path: str) -> list[str] | None:
        """The model's modules whose class holds the finding (None: not exercised)."""
        entries = self.exercised.get(path)
        if not entries:
            return None
        tree = self._tree(d, path)
        if tree is None:
            return None
        for qualname, modules in entries:
            span = _span(tree, qualname)
            if span is not None and span[0] <= d.row <= span[1]:
                return list(modules)
        return None

    def _tree(self, d: Diagnostic, path: str) -> ast.Module | None:
        if path not in self.trees:
            try:
                self.trees[path] = ast.parse("\n".join(self._lines(d)))
            except (SyntaxError, ValueError):
                self.trees[path] = None
        return self.trees[path]


def _nearest(lines: list[str], text: str, row: int) -> int | None:
    rows = [
        n
        for n in range(max(1, row - SHIFT), min(len(lines), row + SHIFT) + 1)
        if lines[n - 1].strip() == text
    ]
    return min(rows, key=lambda n: abs(n - row)) if rows else None


def _span(tree: ast.Module, qualname: str) -> tuple[int, int] | None:
    """The lines of the class or function `qualname` (`Outer.Inner`, `f.<locals>.g`)."""
    parts = [p for p in qualname.split(".") if p != "<locals>"]
    body: list[ast.stmt] = tree.body
    node: ast.AST | None = None
    for part in parts:
        node = next(
            (
                n
                for n in body
                if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                and n.name == part
            ),
            None,
        )
        if node is None:
            return None
        body = node.body  # type: ignore[attr-defined]
    if node is None:
        return None
    first = min([node.lineno] + [x.lineno for x in node.decorator_list])  # type: ignore[attr-defined]
    return first, node.end_lineno or node.lineno  # type: ignore[attr-defined]


def _real(path: str) -> str:
    return os.path.realpath(path)


def load(path: str | os.PathLike[str]) -> StressReport:
    """Read a report file (StressReportError with a clear message when it cannot be used)."""
    return StressReport.load(path)
