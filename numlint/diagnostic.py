"""The finding a rule reports, and the fix it may carry."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Applicability = Literal["safe", "unsafe", "display-only"]
#: How sure numlint is that the bad value occurs: "high" (positive evidence it does: a mask
#: or count sum, a probability that underflows, a deprecated API), "medium", "low" (only the
#: shape of the expression: the norm of some tensor). The default hides "low".
Confidence = Literal["high", "medium", "low"]
CONFIDENCES: tuple[Confidence, ...] = ("low", "medium", "high")
DEFAULT_MIN_CONFIDENCE: Confidence = "medium"


def confidence_rank(level: str) -> int:
    """0 for low, 1 for medium, 2 for high (unknown levels count as high)."""
    return CONFIDENCES.index(level) if level in CONFIDENCES else 2


DOCS_URL = "https://github.com/numlint/numlint/blob/main/rules/{code}.md"


@dataclass(frozen=True)
class Edit:
    """Replace the text between two 1-based (row, column) positions with `content`."""

    content: str
    row: int
    column: int
    end_row: int
    end_column: int

    def to_json(self) -> dict[str, Any]:
        return {
            "content": self.content,
            "location": {"row": self.row, "column": self.column},
            "end_location": {"row": self.end_row, "column": self.end_column},
        }


@dataclass(frozen=True)
class Fix:
    """A set of edits with how safe it is to apply them automatically."""

    applicability: Applicability
    message: str
    edits: tuple[Edit, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "applicability": self.applicability,
            "message": self.message,
            "edits": [e.to_json() for e in self.edits],
        }


@dataclass(frozen=True)
class Diagnostic:
    """One finding. Rows and columns are 1-based; columns count characters."""

    code: str
    name: str
    message: str
    filename: str
    row: int
    column: int
    end_row: int
    end_column: int
    fix: Fix | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    confidence: Confidence = "high"
    #: Other places that explain the finding: (filename, row, column, message), e.g. the
    #: softmax in another function whose output reaches this log.
    related: tuple[tuple[str, int, int, str], ...] = ()

    @property
    def url(self) -> str:
        return DOCS_URL.format(code=self.code)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "code": self.code,
            "name": self.name,
            "message": self.message,
            "filename": self.filename,
            "location": {"row": self.row, "column": self.column},
            "end_location": {"row": self.end_row, "column": self.end_column},
            "fix": self.fix.to_json() if self.fix else None,
            "url": self.url,
            "confidence": self.confidence,
        }
        if self.related:
            data["related"] = [
                {"filename": f, "location": {"row": r, "column": c}, "message": m}
                for f, r, c, m in self.related
            ]
        data.update(self.extra)
        return data


PARSE_ERROR = "NUM000"
PARSE_ERROR_NAME = "parse-error"


def parse_error(path: str, message: str, row: int = 1, column: int = 1) -> Diagnostic:
    """The NUM000 finding for a file numlint could not read or parse."""
    return Diagnostic(PARSE_ERROR, PARSE_ERROR_NAME, message, path, row, column, row, column)
