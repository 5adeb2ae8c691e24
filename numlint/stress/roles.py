"""Which input roles each stress scenario changes (no torch needed: the report and the
verdicts read it). `scenarios.SCENARIOS` holds the same in each Scenario's `varies`."""

from __future__ import annotations

VARIES: dict[str, tuple[str, ...]] = {
    "as given": (),
    "zero rows": ("floats",),
    "duplicated rows": ("floats",),
    "scaled 1e-8": ("floats",),
    "scaled 1e4": ("floats",),
    "large logits": ("floats",),
    "a class once": ("labels",),
    "one class": ("labels",),
    "a class with no sample": ("labels",),
    "duplicates, other labels": ("floats", "labels"),
    "ignore_index everywhere": ("labels",),
    "padding-only sequences": ("tokens", "masks"),
    "empty masks": ("masks",),
    "full masks": ("masks",),
}
