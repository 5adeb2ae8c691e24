"""What a stress run found: the report, its text form, and its JSON file (no torch needed)."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

#: The JSON file's format marker and version.
FORMAT = "numlint-stress-report"
VERSION = 1


class StressReportError(ValueError):
    """A stress report file that cannot be read."""


@dataclass(frozen=True)
class LinkedFinding:
    """A static finding an incident confirms: where it is and the text of its line (to find
    it again after small edits)."""

    code: str
    name: str
    message: str
    filename: str
    row: int
    column: int
    confidence: str
    text: str

    def short(self) -> str:
        """`NUM202 models.py:8 division by a norm, which can be exactly 0`."""
        head = self.message.split(": ", 1)[0]
        return f"{self.code} {display_path(self.filename)}:{self.row} {head}"


@dataclass(frozen=True)
class StressIncident:
    """The first NaN/Inf of one scenario at one dtype: where it began and what it confirms."""

    scenario: str
    dtype: str
    #: "forward", "loss" or "backward".
    phase: str
    #: The module's qualified name in the model ("" for the model itself, "<loss>").
    module: str
    #: "nan" or "inf".
    kind: str
    #: The module's class (`package.module.Class`), when it is one.
    module_class: str = ""
    #: The aten op that made it and its source line (`path:line`), when known.
    op: str = ""
    source: str = ""
    #: One line of numbers: counts, tensor, dtype, shape.
    detail: str = ""
    findings: tuple[LinkedFinding, ...] = ()

    def place(self) -> str:
        """`forward of 'encoder.norm'`, `the loss`, `backward of the loss`."""
        if self.module == "<loss>":
            return "backward of the loss" if "its gradient not" in self.detail else "the loss"
        return f"{self.phase} of {self.module or '<model>'!r}"

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["findings"] = [asdict(f) for f in self.findings]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StressIncident:
        found = tuple(LinkedFinding(**f) for f in data.get("findings", ()))
        return cls(**{**data, "findings": found})


@dataclass(frozen=True)
class StressRun:
    """One scenario at one dtype: "ok", "failed" (an incident) or "skipped" (with why)."""

    scenario: str
    dtype: str
    status: str
    reason: str = ""


@dataclass
class StressFailure:
    """An exception a run raised (not a NaN/Inf): where, once, with the runs it ended."""

    #: "forward", "loss" or "backward".
    phase: str
    #: The innermost module of the model on the stack ("" for none, "<loss>").
    module: str
    #: `TypeError: ...`, its first line.
    error: str
    #: The innermost line of the user's code on the stack (`path:line`) and its text.
    source: str = ""
    code: str = ""
    #: (scenario, dtype) of each run it ended.
    runs: list[tuple[str, str]] = field(default_factory=list)
    findings: tuple[LinkedFinding, ...] = ()

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["runs"] = [list(r) for r in self.runs]
        data["findings"] = [asdict(f) for f in self.findings]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StressFailure:
        found = tuple(LinkedFinding(**f) for f in data.get("findings", ()))
        runs = [(str(a), str(b)) for a, b in data.get("runs", [])]
        return cls(**{**data, "runs": runs, "findings": found})

    def where(self) -> str:
        """`the loss at losses.py:12`, `forward of 'gram' at model.py:8`."""
        who = (
            "the loss"
            if self.module == "<loss>"
            else f"{self.phase} of {self.module or '<model>'!r}"
        )
        return f"{who} at {display_path(self.source)}" if self.source else who


@dataclass(frozen=True)
class ExercisedClass:
    """A class of the user's code whose modules ran in every completed run."""

    filename: str
    qualname: str
    modules: tuple[str, ...] = ()


@dataclass
class StressReport:
    """The result of `numlint.stress`: `ok` when no scenario failed."""

    model: str
    runs: list[StressRun] = field(default_factory=list)
    incidents: list[StressIncident] = field(default_factory=list)
    exercised: list[ExercisedClass] = field(default_factory=list)
    seed: int = 0
    seconds: float = 0.0
    #: Exceptions the runs raised, once per place.
    errors: list[StressFailure] = field(default_factory=list)
    #: The roles of the inputs (model inputs and the loss's own tensors) a scenario could vary.
    roles: list[str] = field(default_factory=list)
    #: The lines of the user's files that ran on the inputs as given (absent: not traced).
    lines: dict[str, list[int]] | None = None

    @property
    def ok(self) -> bool:
        """True when no scenario made a NaN or Inf or raised."""
        return not self.incidents and not self.errors

    def varied(self) -> set[str]:
        """The input roles some completed run changed ("floats", "labels", ...)."""
        from numlint.stress.roles import VARIES

        out: set[str] = set()
        for r in self.runs:
            if r.status in ("ok", "failed"):
                out.update(VARIES.get(r.scenario, ()))
        return out & set(self.roles)

    def unvaried(self) -> list[str]:
        """The input roles present that no completed run changed."""
        return [r for r in self.roles if r not in self.varied()]

    @property
    def skipped(self) -> list[StressRun]:
        """The runs that could not be made (a dtype the device cannot autocast to, ...)."""
        return [r for r in self.runs if r.status == "skipped"]

    def completed_dtypes(self) -> list[str]:
        """The dtypes of the runs that ran, in order."""
        return list(dict.fromkeys(r.dtype for r in self.runs if r.status != "skipped"))

    def scenario_names(self) -> list[str]:
        return list(dict.fromkeys(r.scenario for r in self.runs))

    # ------------------------------------------------------------------ JSON
    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "model": self.model,
            "seed": self.seed,
            "seconds": round(self.seconds, 3),
            "ok": self.ok,
            "runs": [asdict(r) for r in self.runs],
            "incidents": [i.to_json() for i in self.incidents],
            "exercised": [{**asdict(e), "modules": list(e.modules)} for e in self.exercised],
            "errors": [e.to_json() for e in self.errors],
            "roles": list(self.roles),
            "lines": self.lines,
        }

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the JSON file `numlint check --stress-report` reads; return its path."""
        out = Path(path)
        out.write_text(json.dumps(self.to_json(), indent=2) + "\n", encoding="utf-8")
        return out

    @classmethod
    def from_json(cls, data: Any) -> StressReport:
        """Build from `to_json()`'s dictionary; StressReportError when it is not one."""
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise StressReportError(f'not a numlint stress report (no "format": "{FORMAT}")')
        if data.get("version") != VERSION:
            raise StressReportError(
                f"stress report version {data.get('version')!r} is not supported "
                f"(this numlint reads version {VERSION})"
            )
        try:
            return cls(
                model=str(data.get("model", "")),
                runs=[StressRun(**r) for r in data.get("runs", [])],
                incidents=[StressIncident.from_json(i) for i in data.get("incidents", [])],
                exercised=[
                    ExercisedClass(e["filename"], e["qualname"], tuple(e.get("modules", ())))
                    for e in data.get("exercised", [])
                ],
                seed=int(data.get("seed", 0)),
                seconds=float(data.get("seconds", 0.0)),
                errors=[StressFailure.from_json(e) for e in data.get("errors", [])],
                roles=[str(r) for r in data.get("roles", [])],
                lines=(
                    {str(k): [int(n) for n in v] for k, v in data["lines"].items()}
                    if isinstance(data.get("lines"), dict)
                    else None
                ),
            )
        except (TypeError, KeyError, ValueError) as exc:
            raise StressReportError(f"malformed stress report: {exc}") from None

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> StressReport:
        """Read a report file; StressReportError (with the path) when it cannot be used."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise StressReportError(f"stress report {path}: no such file") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise StressReportError(f"cannot read stress report {path}: {exc}") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise StressReportError(f"stress report {path} is not JSON: {exc}") from None
        try:
            return cls.from_json(data)
        except StressReportError as exc:
            raise StressReportError(f"stress report {path}: {exc}") from None

    # ------------------------------------------------------------------ text
    def __str__(self) -> str:
        done = [r for r in self.runs if r.status != "skipped"]
        scenarios = self.scenario_names()
        head = (
            f"numlint stress: {self.model}: "
            f"{len(self.incidents) or 'no'} incident{'s' * (len(self.incidents) != 1)} in "
            f"{len(done)} run{'s' * (len(done) != 1)} ({len(scenarios)} scenarios; dtypes: "
            f"{', '.join(self.completed_dtypes()) or 'none'})"
        )
        lines = [head]
        if self.incidents:
            rows = [("scenario", "dtype", "phase", "module", "kind", "static finding")]
            for i in self.incidents:
                links = [f.short() for f in i.findings] or ["(none in its code)"]
                for k, link in enumerate(links):
                    cells = (i.scenario, i.dtype, i.phase, i.module or "<model>", i.kind)
                    rows.append((*(cells if k == 0 else ("",) * 5), link))
            lines += ["", *_table(rows)]
            detail = []
            for i in self.incidents:
                where = f"{i.scenario}, {i.dtype}: {i.place()}"
                made = f"; made by {i.op} at {display_path(i.source)}" if i.op else ""
                detail.append(f"  {where}: {i.detail}{made}")
            lines += ["", "where:", *detail]
            found = {
                (f.filename, f.row, f.column, f.code): f for i in self.incidents for f in i.findings
            }
            if found:
                lines += ["", "confirmed findings:"]
                for f in found.values():
                    lines.append(
                        f"  {display_path(f.filename)}:{f.row}:{f.column}: {f.code} {f.message}"
                    )
        if self.errors:
            lines += ["", "errors (the run raised; not a NaN/Inf):"]
            for e in self.errors:
                lines.append(f"  {e.where()}: {e.error}")
                if e.code:
                    lines.append(f"    {e.code}")
                lines.append(f"    in {_runs_text(e.runs)}")
                for f in e.findings:
                    lines.append(f"    static: {f.short()}")
        skipped: dict[tuple[str, str], list[str]] = {}
        for r in self.skipped:
            skipped.setdefault((r.dtype, r.reason), []).append(r.scenario)
        by_reason: dict[tuple[str, tuple[str, ...]], list[str]] = {}
        for (dtype, reason), names in skipped.items():
            by_reason.setdefault((reason, tuple(names)), []).append(dtype)
        if by_reason:
            lines.append("")
        for (reason, names), dtypes in by_reason.items():
            what = (
                f"{len(names)} scenarios" if len(names) == len(scenarios) > 1 else ", ".join(names)
            )
            lines.append(f"skipped: {', '.join(dtypes)} ({what}): {reason}")
        unvaried = self.unvaried()
        if unvaried:
            lines.append(
                "not varied: " + ", ".join(unvaried) + " (findings that need them are not reached)"
            )
        return "\n".join(lines)


def _runs_text(runs: list[tuple[str, str]]) -> str:
    """`float16: as given, zero rows; bfloat16: as given`."""
    by_dtype: dict[str, list[str]] = {}
    for scenario, dtype in runs:
        by_dtype.setdefault(dtype, []).append(scenario)
    return "; ".join(f"{d}: {', '.join(s)}" for d, s in by_dtype.items())


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]) - 1)]
    out = []
    for n, row in enumerate(rows):
        cells = [cell.ljust(w) for cell, w in zip(row, widths, strict=False)] + [row[-1]]
        out.append("  ".join(cells).rstrip())
        if n == 0:
            out.append("  ".join(["-" * w for w in widths] + ["-" * len(row[-1])]))
    return out


def display_path(path: str) -> str:
    """`path` relative to the working directory when it is inside it (`src/model.py:8`)."""
    if not path:
        return path
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive
        return path
    return path if rel.startswith("..") else rel
