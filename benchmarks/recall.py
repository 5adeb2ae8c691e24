"""Recall ledger: documented numerical bugs in real PyTorch code, and whether numlint flags them.

Each bug in benchmarks/recall/bugs.tsv was reported publicly (an issue or pull request where
users hit NaN/Inf or a silently wrong gradient) and fixed; the row pins the buggy line at a
PyPI release or a GitHub commit. See docs/precision.md, "Recall ledger".

    python benchmarks/recall.py fetch            # PyPI pins: download, verify, unpack
    python benchmarks/recall.py run              # lint the files, print per-bug status
    python benchmarks/recall.py report           # (default) per-bug status, totals, per rule
    python benchmarks/recall.py report --check   # exit 1 when an `expect=default` bug leaves
                                                 # the default view
"""

from __future__ import annotations

import argparse
import hashlib
import re
import subprocess
import sys
import urllib.request
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ledger import DEFAULT_LEVELS, _dist_name, extract, norm_text  # noqa: E402

HERE = Path(__file__).resolve().parent
DATA = HERE / "recall"
BUGS = DATA / "bugs.tsv"
PINS = DATA / "pins.tsv"
CONTEXT = DATA / "context.tsv"
WORK = HERE / ".recall"
DIST = WORK / "dist"
SRC = WORK / "src"
COLUMNS = (
    "id", "project", "source", "path", "line", "code", "text", "kind", "report_url", "fix",
    "expect", "note",
)  # fmt: skip
STATUSES = ("default", "hidden", "missed")


@dataclass(frozen=True)
class Bug:
    id: str
    project: str
    source: str
    path: str
    line: int
    code: str
    text: str
    kind: str
    report_url: str
    fix: str
    expect: str
    note: str


@dataclass(frozen=True)
class Hit:
    line: int
    code: str
    confidence: str
    text: str
    message: str


def load_bugs() -> list[Bug]:
    """The documented bugs (benchmarks/recall/bugs.tsv)."""
    out = []
    for n, line in enumerate(BUGS.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        cols = line.split("\t")
        if len(cols) != len(COLUMNS):
            raise SystemExit(f"{BUGS}:{n}: expected {len(COLUMNS)} columns, got {len(cols)}")
        row = dict(zip(COLUMNS, cols, strict=True))
        out.append(Bug(**{**row, "line": int(row["line"])}))  # type: ignore[arg-type]
    return out


def load_pins() -> dict[str, str]:
    """sha256 of each PyPI pin's downloaded file, by source (`pypi:NAME==VER`)."""
    pins = {}
    for line in PINS.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            source, sha = line.split("\t")[:2]
            pins[source] = sha
    return pins


def load_context() -> list[tuple[str, str]]:
    """Files a GitHub pin's finding reads beside the bug's own (the model a training script
    imports): (source, path), from benchmarks/recall/context.tsv."""
    rows = []
    for line in CONTEXT.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            source, path = line.split("\t")[:2]
            rows.append((source, path))
    return rows


def root_of(source: str) -> Path:
    """Where a pin's files lie: `src/NAME==VER` or `src/OWNER__REPO@SHA7`."""
    kind, _, ref = source.partition(":")
    if kind == "pypi":
        return SRC / ref
    repo, _, sha = ref.partition("@")
    return SRC / f"{repo.replace('/', '__')}@{sha[:7]}"


def archive_of(requirement: str, digest: str | None = None) -> Path | None:
    """The downloaded wheel or sdist of `NAME==VER`, if present: the one whose sha256 is
    `digest` when that is given (an index may offer a wheel beside the pinned sdist)."""
    name, version = requirement.split("==")
    prefix = f"{_dist_name(name)}_{_dist_name(version)}"
    found = [
        f
        for f in DIST.glob("*")
        if _dist_name(f.name).startswith(prefix) and f.name.endswith((".whl", ".tar.gz", ".zip"))
    ]
    found.sort(key=lambda f: not f.name.endswith(".whl"))
    if digest:
        found = [f for f in found if hashlib.sha256(f.read_bytes()).hexdigest() == digest]
    return found[0] if found else None


def _download_by_digest(requirement: str, digest: str) -> None:
    """Download the file of `NAME==VER` whose sha256 is `digest` straight from PyPI's simple
    index: for an sdist whose metadata pip refuses to prepare (a direct URL dependency)."""
    name = requirement.split("==")[0]
    try:
        with urllib.request.urlopen(f"https://pypi.org/simple/{name}/", timeout=60) as reply:
            page = reply.read().decode("utf-8", "replace")
        for url in re.findall(r'href="([^"#]+)#sha256=' + digest + '"', page):
            with urllib.request.urlopen(url, timeout=300) as reply:
                (DIST / url.rsplit("/", 1)[-1]).write_bytes(reply.read())
            return
    except OSError as exc:
        print(f"{requirement}: {exc}", file=sys.stderr)


def fetch(bugs: list[Bug]) -> int:
    """Download and unpack the PyPI pins (sha256 checked); list missing GitHub files."""
    pins = load_pins()
    DIST.mkdir(parents=True, exist_ok=True)
    bad = 0
    for source in sorted({b.source for b in bugs if b.source.startswith("pypi:")}):
        req = source.removeprefix("pypi:")
        pinned = pins.get(source) if pins.get(source) not in (None, "", "-") else None
        if archive_of(req, pinned) is None:
            cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(DIST)]
            if subprocess.run([*cmd, req], check=False).returncode or (
                pinned and archive_of(req, pinned) is None
            ):
                cmd.extend(["--no-binary", ":all:"])  # the pin is the sdist
                subprocess.run([*cmd, req], check=False)
            if pinned and archive_of(req, pinned) is None:
                _download_by_digest(req, pinned)  # pip cannot prepare its metadata
        archive = archive_of(req, pinned) or archive_of(req)
        if archive is None:
            print(f"{source}: not downloaded", file=sys.stderr)
            bad += 1
            continue
        digest = hashlib.sha256(archive.read_bytes()).hexdigest()
        if pins.get(source) not in (None, "", "-", digest):
            print(f"{source}: {archive.name} sha256 {digest} != {pins[source]}", file=sys.stderr)
            bad += 1
            continue
        if pins.get(source) in (None, "", "-"):
            print(f"{source}: not pinned; add to {PINS.name}: {source}\t{digest}")
        dest = root_of(source)
        stamp = dest / ".from"
        if stamp.exists() and stamp.read_text() == digest:
            continue
        n = extract(archive, dest)
        stamp.write_text(digest)
        print(f"{source}: {n} files from {archive.name}")
    for b in bugs:
        if b.source.startswith("github:") and not (root_of(b.source) / b.path).exists():
            print(f"{b.id}: missing {root_of(b.source) / b.path} (save it from {b.source})")
            bad += 1
    for source, path in load_context():
        if not (root_of(source) / path).exists():
            print(f"context: missing {root_of(source) / path} (save it from {source})")
            bad += 1
    return 1 if bad else 0


def mark_project(source: str) -> None:
    """Make a pin its own project: without a marker at its top, numlint would take the
    repository holding the benchmark for the pin's project (its files, its float16 settings,
    its callers). A distribution gets a `pyproject.toml` naming it; a GitHub pin, a few
    files of a repository, an empty one: no `.git`, since the files that call its
    functions are not stored (numlint.analysis.liveness reads a lone directory's public
    functions as reachable, a whole checkout's as dead when nothing calls them)."""
    root = root_of(source)
    if not root.is_dir() or any(
        (root / m).exists() for m in ("pyproject.toml", "setup.py", "setup.cfg")
    ):
        return
    text = ""
    if source.startswith("pypi:"):
        text = f'[project]\nname = "{source.removeprefix("pypi:").split("==")[0]}"\n'
    (root / "pyproject.toml").write_text(text)


def lint(bugs: list[Bug]) -> dict[Path, list[Hit]]:
    """Findings of every default rule at min-confidence low, per bug file."""
    from numlint.api import lint_paths

    for source in {b.source for b in bugs}:
        mark_project(source)
    files = sorted({(root_of(b.source) / b.path).resolve() for b in bugs})
    missing = [str(f) for f in files if not f.exists()]
    if missing:
        raise SystemExit(f"not fetched: {', '.join(missing)}; run `recall.py fetch`")
    out: dict[Path, list[Hit]] = {}
    for path, diags in lint_paths(files, config={"min-confidence": "low"}, jobs=4):
        src = path.read_text(encoding="utf-8", errors="replace").splitlines()
        out[path.resolve()] = [
            Hit(
                d.row,
                d.code,
                getattr(d, "confidence", None) or "high",
                norm_text(src[d.row - 1]) if 0 < d.row <= len(src) else "",
                d.message,
            )
            for d in diags
        ]
    return out


def match(bug: Bug, hits: list[Hit]) -> Hit | None:
    """The finding of `bug`: same code and line; failing that, same code and line text
    (nearest line); the most confident one when several."""
    rank = {level: i for i, level in enumerate(("high", "medium", "low"))}
    same = [h for h in hits if h.code == bug.code and h.line == bug.line]
    if not same:
        text = norm_text(bug.text)
        same = [h for h in hits if h.code == bug.code and h.text == text]
        same.sort(key=lambda h: abs(h.line - bug.line))
    same.sort(key=lambda h: rank.get(h.confidence, 3))
    return same[0] if same else None


def status(hit: Hit | None) -> str:
    if hit is None:
        return "missed"
    return "default" if hit.confidence in DEFAULT_LEVELS else "hidden"


def report(bugs: list[Bug], found: dict[Path, list[Hit]], check: bool) -> int:
    """Print per-bug status, totals and per-rule recall; 1 with `check` when an
    `expect=default` bug is no longer in the default view."""
    per_rule: dict[str, Counter[str]] = defaultdict(Counter)
    total: Counter[str] = Counter()
    regressions = []
    print(f"{'id':5} {'status':8} {'conf':6} {'code':7} place")
    for b in bugs:
        hits = found.get((root_of(b.source) / b.path).resolve(), [])
        hit = match(b, hits)
        st = status(hit)
        per_rule[b.code][st] += 1
        total[st] += 1
        conf = hit.confidence if hit else "-"
        print(f"{b.id:5} {st:8} {conf:6} {b.code:7} {b.project}: {b.path}:{b.line}")
        if hit is not None and st != "default":
            print(f"{'':22} {hit.message}")
        if st != "default":
            others = sorted({f"{h.code}@{h.line}[{h.confidence}]" for h in hits
                             if abs(h.line - b.line) <= 2})  # fmt: skip
            if others:
                print(f"{'':22} near: {', '.join(others)}")
        if b.expect == "default" and st != "default":
            regressions.append((b, st))
    n = len(bugs)
    projects = len({b.project for b in bugs})

    def pct(k: int, of: int) -> str:
        return f"{100 * k / of:.0f}%" if of else "-"

    print(f"\n{n} bugs in {projects} projects")
    shown, low = total["default"], total["default"] + total["hidden"]
    print(f"default view (high/medium): {shown}/{n} = {pct(shown, n)}")
    print(f"all confidences (low too):  {low}/{n} = {pct(low, n)}")
    print(f"missed: {total['missed']}")
    print(f"\n  {'rule':7} {'bugs':>5} {'default':>8} {'recall':>7} {'any':>5} {'recall':>7}")
    for code in sorted(per_rule):
        c = per_rule[code]
        k = sum(c.values())
        anyc = c["default"] + c["hidden"]
        print(f"  {code:7} {k:5d} {c['default']:8d} {pct(c['default'], k):>7} {anyc:5d} "
              f"{pct(anyc, k):>7}")  # fmt: skip
    if regressions:
        print(f"\n!!! {len(regressions)} bugs expected in the default view are not:")
        for b, st in regressions:
            print(f"!!!   {b.id} {b.project}: {b.path}:{b.line} {b.code} now {st}")
    return 1 if check and regressions else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("command", nargs="?", default="report", choices=["fetch", "run", "report"])
    ap.add_argument("--check", action="store_true",
                    help="exit 1 when an expect=default bug leaves the default view")  # fmt: skip
    ap.add_argument("--id", action="append", help="only these bugs")
    ap.add_argument("--project", action="append", help="only these projects")
    args = ap.parse_args(argv)
    bugs = load_bugs()
    if args.id:
        bugs = [b for b in bugs if b.id in args.id]
    if args.project:
        bugs = [b for b in bugs if b.project in args.project]
    if args.command == "fetch":
        return fetch(bugs)
    found: dict[Path, Any] = lint(bugs)
    return report(bugs, found, args.check)


if __name__ == "__main__":
    sys.exit(main())
