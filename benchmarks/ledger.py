"""Precision ledger: numlint's findings on pinned real PyTorch projects against judged verdicts.

The projects and their pinned releases are listed in benchmarks/ledger/projects.tsv; each
finding judged by hand is a line of benchmarks/ledger/judgements.tsv with a verdict: `real`
(the bad value occurs in normal use), `theoretical` (possible, not reachable in practice) or
`false` (the finding is wrong). See docs/precision.md.

    python benchmarks/ledger.py fetch        # download and unpack the pinned releases
    python benchmarks/ledger.py run          # lint them, store the findings
    python benchmarks/ledger.py report       # (default) rates, per-rule verdicts, regressions
    python benchmarks/ledger.py unjudged --code NUM202 --limit 20   # findings to judge
    python benchmarks/ledger.py report --check   # exit 1 when a judged real hazard is lost
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA = HERE / "ledger"
PROJECTS = DATA / "projects.tsv"
JUDGEMENTS = DATA / "judgements.tsv"
WORK = HERE / ".ledger"
DIST = WORK / "dist"
SRC = WORK / "src"
FINDINGS = WORK / "findings.jsonl"

VERDICTS = ("real", "theoretical", "false")
LEVELS = ("high", "medium", "low")
#: What the default configuration shows (min-confidence "medium").
DEFAULT_LEVELS = ("high", "medium")
JUDGEMENT_HEADER = "# project\tpath\tline\tcode\ttext\tverdict\treason"


@dataclass(frozen=True)
class Project:
    name: str
    requirement: str
    sha256: str


@dataclass
class Finding:
    project: str
    path: str
    line: int
    column: int
    code: str
    text: str
    message: str
    confidence: str | None


@dataclass
class Judgement:
    project: str
    path: str
    line: int
    code: str
    text: str
    verdict: str
    reason: str


def norm_text(line: str) -> str:
    """A source line as a key: stripped, inner whitespace runs (tabs included) made one space."""
    return " ".join(line.split())


def load_projects() -> list[Project]:
    """The pinned projects (benchmarks/ledger/projects.tsv)."""
    out = []
    for line in PROJECTS.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, req, sha = line.split("\t")
            out.append(Project(name, req, sha))
    return out


def _dist_name(s: str) -> str:
    return re.sub(r"[-_.]+", "_", s).lower()


def archive_of(project: Project) -> Path | None:
    """The downloaded wheel or sdist of a pinned project, if present."""
    name, version = project.requirement.split("==")
    prefix = f"{_dist_name(name)}_{_dist_name(version)}"
    found = [
        f
        for f in DIST.glob("*")
        if _dist_name(f.name).startswith(prefix) and f.name.endswith((".whl", ".tar.gz", ".zip"))
    ]
    return found[0] if len(found) == 1 else None


def extract(archive: Path, dest: Path) -> int:
    """Unpack the .py files of a wheel or sdist into `dest` (an sdist's top folder dropped)."""
    shutil.rmtree(dest, ignore_errors=True)
    n = 0
    if archive.name.endswith(".whl"):
        with zipfile.ZipFile(archive) as z:
            for name in z.namelist():
                if name.endswith(".py") and ".dist-info/" not in name:
                    target = dest / name
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(z.read(name))
                    n += 1
        return n
    with tarfile.open(archive) as t:
        for member in t.getmembers():
            parts = Path(member.name).parts
            if member.isfile() and member.name.endswith(".py") and len(parts) > 1:
                fh = t.extractfile(member)
                if fh is None:
                    continue
                target = dest.joinpath(*parts[1:])
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(fh.read())
                n += 1
    return n


def fetch(projects: list[Project]) -> int:
    """Download (once) and unpack every pinned release; verify each file's sha256."""
    DIST.mkdir(parents=True, exist_ok=True)
    missing = [p for p in projects if archive_of(p) is None]
    if missing:
        cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(DIST)]
        subprocess.run([*cmd, *(p.requirement for p in missing)], check=True)
    bad = 0
    for p in projects:
        archive = archive_of(p)
        if archive is None:
            print(f"{p.name}: {p.requirement} not downloaded", file=sys.stderr)
            bad += 1
            continue
        digest = hashlib.sha256(archive.read_bytes()).hexdigest()
        if p.sha256 not in ("", "-") and digest != p.sha256:
            print(f"{p.name}: {archive.name} sha256 {digest} != pinned {p.sha256}", file=sys.stderr)
            bad += 1
            continue
        dest = SRC / p.name
        stamp = dest / ".from"
        if stamp.exists() and stamp.read_text() == digest:
            continue
        n = extract(archive, dest)
        stamp.write_text(digest)
        print(f"{p.name}: {n} files from {archive.name}")
    return 1 if bad else 0


def count_lines(root: Path) -> int:
    """Lines in every .py file under `root`."""
    return sum(f.read_bytes().count(b"\n") for f in root.rglob("*.py"))


def supports_confidence() -> bool:
    """Whether this numlint has confidence levels (a `min-confidence` configuration key)."""
    try:
        from numlint import config
    except ImportError:
        return False
    return "min-confidence" in getattr(config, "KNOWN_KEYS", ())


def lint(projects: list[Project], config: dict[str, Any]) -> tuple[list[Finding], dict[str, int]]:
    """Lint every project; (findings, lines per project)."""
    from numlint.api import lint_paths

    config = dict(config)
    if supports_confidence():
        config.setdefault("min-confidence", "low")
    roots = [SRC / p.name for p in projects]
    missing = [str(r) for r in roots if not r.exists()]
    if missing:
        raise SystemExit(f"not fetched: {', '.join(missing)}; run `ledger.py fetch`")
    lines = {p.name: count_lines(SRC / p.name) for p in projects}
    findings: list[Finding] = []
    text_cache: dict[Path, list[str]] = {}
    for path, diags in lint_paths(roots, config=config, jobs=2):
        if not diags:
            continue
        rel = path.resolve().relative_to(SRC.resolve())
        project, inner = rel.parts[0], Path(*rel.parts[1:]).as_posix()
        src = text_cache.setdefault(
            path, path.read_text(encoding="utf-8", errors="replace").splitlines()
        )
        for d in diags:
            text = src[d.row - 1] if 0 < d.row <= len(src) else ""
            findings.append(
                Finding(
                    project,
                    inner,
                    d.row,
                    d.column,
                    d.code,
                    norm_text(text),
                    d.message,
                    getattr(d, "confidence", None),
                )
            )
    findings.sort(key=lambda f: (f.project, f.path, f.line, f.column, f.code))
    return findings, lines


def save(findings: list[Finding], lines: dict[str, int], seconds: float) -> None:
    WORK.mkdir(parents=True, exist_ok=True)
    with FINDINGS.open("w", encoding="utf-8") as fh:
        fh.write(json.dumps({"lines": lines, "seconds": round(seconds, 1)}) + "\n")
        for f in findings:
            fh.write(json.dumps(asdict(f)) + "\n")


def load() -> tuple[list[Finding], dict[str, int]] | None:
    if not FINDINGS.exists():
        return None
    rows = FINDINGS.read_text(encoding="utf-8").splitlines()
    lines = json.loads(rows[0])["lines"]
    return [Finding(**json.loads(r)) for r in rows[1:]], lines


def load_judgements() -> list[Judgement]:
    """The judged findings (benchmarks/ledger/judgements.tsv)."""
    if not JUDGEMENTS.exists():
        return []
    out = []
    for n, line in enumerate(JUDGEMENTS.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        cols = line.split("\t")
        if len(cols) != 7 or cols[5] not in VERDICTS:
            raise SystemExit(f"{JUDGEMENTS}:{n}: expected 7 tab-separated columns and a verdict")
        project, path, row, code, text, verdict, reason = cols
        out.append(Judgement(project, path, int(row), code, text, verdict, reason))
    return out


def match(
    findings: list[Finding], judgements: list[Judgement]
) -> tuple[dict[int, Judgement], list[Judgement]]:
    """Verdicts by finding index, and the judgements no finding matches any more.

    A judgement matches a finding at the same project, path, line and code; failing that, one
    with the same project, path, code and line text (the line moved within the file)."""
    exact: dict[tuple[str, str, int, str], list[int]] = defaultdict(list)
    by_text: dict[tuple[str, str, str, str], list[int]] = defaultdict(list)
    for i, f in enumerate(findings):
        exact[(f.project, f.path, f.line, f.code)].append(i)
        by_text[(f.project, f.path, f.code, f.text)].append(i)
    verdicts: dict[int, Judgement] = {}
    pending = []
    for j in judgements:
        free = [i for i in exact.get((j.project, j.path, j.line, j.code), []) if i not in verdicts]
        if free:
            verdicts[free[0]] = j
        else:
            pending.append(j)
    lost = []
    for j in pending:
        cands = [
            i for i in by_text.get((j.project, j.path, j.code, j.text), []) if i not in verdicts
        ]
        if cands:
            verdicts[min(cands, key=lambda i: abs(findings[i].line - j.line))] = j
        else:
            lost.append(j)
    return verdicts, lost


def split_line(counts: Counter[str]) -> str:
    judged = sum(counts[v] for v in VERDICTS)
    if not judged:
        return "no judged findings"
    pct = {v: 100 * counts[v] / judged for v in VERDICTS}
    return (
        f"{judged} judged: real {pct['real']:.0f}%, theoretical {pct['theoretical']:.0f}%, "
        f"false {pct['false']:.0f}%; {counts['unjudged']} unjudged"
    )


def table(title: str, idx: list[int], findings: list[Finding], verdicts: dict[int, Judgement],
          kloc: float) -> None:  # fmt: skip
    """Per-rule counts and verdicts for the findings at `idx`."""
    per: dict[str, Counter[str]] = defaultdict(Counter)
    total: Counter[str] = Counter()
    for i in idx:
        v = verdicts[i].verdict if i in verdicts else "unjudged"
        per[findings[i].code][v] += 1
        per[findings[i].code]["n"] += 1
        total[v] += 1
    print(f"\n{title}: {len(idx)} findings, {len(idx) / kloc:.3f} per 1,000 lines")
    print(f"  {'rule':7} {'count':>6} {'/kloc':>7} {'real':>5} {'theor':>6} {'false':>6} "
          f"{'unjudg':>7} {'real%':>6} {'false%':>7}")  # fmt: skip
    for code in sorted(per):
        c = per[code]
        judged = sum(c[v] for v in VERDICTS)
        real = f"{100 * c['real'] / judged:.0f}" if judged else "-"
        false = f"{100 * c['false'] / judged:.0f}" if judged else "-"
        print(
            f"  {code:7} {c['n']:6d} {c['n'] / kloc:7.3f} {c['real']:5d} {c['theoretical']:6d} "
            f"{c['false']:6d} {c['unjudged']:7d} {real:>6} {false:>7}"
        )
    print(f"  overall: {split_line(total)}")


def enabled_codes(config: dict[str, Any]) -> set[str]:
    """The rule codes a `[tool.numlint]`-shaped configuration enables."""
    from numlint.config import Config

    return {rule.CODE for rule, _ in Config.from_table(config).rules_for()}


def report(
    findings: list[Finding], lines: dict[str, int], check: bool, codes: set[str] | None = None
) -> int:
    """Print rates, per-rule verdict tables and regressions; 1 with `check` when a judged real
    hazard is no longer reported. Judgements of rules outside `codes`, or of projects not
    linted, are left out."""
    judgements = [
        j for j in load_judgements() if j.project in lines and (codes is None or j.code in codes)
    ]
    verdicts, lost = match(findings, judgements)
    total_lines = sum(lines.values())
    kloc = total_lines / 1000
    per_project = Counter(f.project for f in findings)
    has_conf = any(f.confidence is not None for f in findings)
    shown = [
        i
        for i, f in enumerate(findings)
        if not has_conf or (f.confidence or "high") in DEFAULT_LEVELS
    ]
    per_project_shown = Counter(findings[i].project for i in shown)
    print(f"{'project':28} {'lines':>9} {'shown':>6} {'/kloc':>7} {'all':>6}")
    for name, n in sorted(lines.items()):
        print(
            f"{name:28} {n:9,d} {per_project_shown[name]:6d} "
            f"{1000 * per_project_shown[name] / max(n, 1):7.3f} {per_project[name]:6d}"
        )
    print(f"{'total':28} {total_lines:9,d} {len(shown):6d} {len(shown) / kloc:7.3f} "
          f"{len(findings):6d}")  # fmt: skip
    title = "default view (min-confidence medium)" if has_conf else "all findings"
    table(title, shown, findings, verdicts, kloc)
    if has_conf:
        table("all findings (min-confidence low)", list(range(len(findings))), findings, verdicts,
              kloc)  # fmt: skip
        for level in LEVELS:
            idx = [i for i, f in enumerate(findings) if f.confidence == level]
            table(f"confidence {level}", idx, findings, verdicts, kloc)
    shown_set = set(shown)
    hidden_real = [
        findings[i] for i in verdicts if i not in shown_set and verdicts[i].verdict == "real"
    ]
    # a hazard another rule now reports on the same line, judged real there, is not lost
    # (`where(n != 0, v / n, 0)`: a division by 0 once, a where-branch NaN gradient now)
    real_lines = {
        (findings[i].project, findings[i].path, findings[i].line)
        for i, j in verdicts.items()
        if j.verdict == "real"
    }
    moved = [j for j in lost if j.verdict == "real" and (j.project, j.path, j.line) in real_lines]
    lost_real = [j for j in lost if j.verdict == "real" and j not in moved]
    if moved:
        print(f"\n{len(moved)} judged real hazards are reported on the same line by another rule:")
        for j in moved:
            print(f"  {j.project}/{j.path}:{j.line} {j.code} {j.text}")
    if lost_real:
        print(f"\n!!! {len(lost_real)} judged REAL hazards are no longer reported:")
        for j in lost_real:
            print(f"!!!   {j.project}/{j.path}:{j.line} {j.code} {j.text}  ({j.reason})")
    if hidden_real:
        print(f"\n!!! {len(hidden_real)} judged REAL hazards are hidden by min-confidence medium:")
        for f in hidden_real:
            print(f"!!!   {f.project}/{f.path}:{f.line} {f.code} [{f.confidence}] {f.text}")
    others = [j for j in lost if j.verdict != "real"]
    if others:
        print(f"\n{len(others)} judged findings no longer reported (not real hazards):")
        for j in others:
            print(f"  {j.verdict:11} {j.project}/{j.path}:{j.line} {j.code} {j.text}")
    return 1 if check and lost_real else 0


def context(f: Finding, around: int) -> str:
    path = SRC / f.project / f.path
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    lo, hi = max(1, f.line - around), min(len(lines), f.line + around)
    return "\n".join(
        f"{'>' if n == f.line else ' '} {n:5d} | {lines[n - 1]}" for n in range(lo, hi + 1)
    )


def unjudged(findings: list[Finding], codes: Iterable[str], limit: int, seed: int | None,
             around: int, levels: Iterable[str] = ()) -> int:  # fmt: skip
    """Print unjudged findings with source context: sorted, or a seeded sample spread over rules."""
    verdicts, _ = match(findings, load_judgements())
    prefixes, wanted = tuple(codes), set(levels)
    todo = [
        f
        for i, f in enumerate(findings)
        if i not in verdicts
        and (not prefixes or f.code.startswith(prefixes))
        and (not wanted or f.confidence in wanted)
    ]
    if seed is not None:
        per: dict[str, list[Finding]] = defaultdict(list)
        for f in todo:
            per[f.code].append(f)
        rng = random.Random(seed)
        for items in per.values():
            rng.shuffle(items)
        todo = []
        rounds = max((len(v) for v in per.values()), default=0)
        for r in range(rounds):
            todo.extend(per[c][r] for c in sorted(per) if r < len(per[c]))
    else:
        todo.sort(key=lambda f: (f.code, f.project, f.path, f.line))
    print(f"{len(todo)} unjudged findings" + (f"; showing {limit}" if limit else ""))
    for f in todo[: limit or None]:
        conf = f" [{f.confidence}]" if f.confidence else ""
        print(f"\n== {f.project}\t{f.path}\t{f.line}\t{f.code}{conf}  {f.message}")
        print(context(f, around))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("command", nargs="?", default="report",
                    choices=["fetch", "run", "report", "unjudged", "sample"])  # fmt: skip
    ap.add_argument("--project", action="append", help="only these projects")
    ap.add_argument("--select", help="comma-separated codes (default: every default rule)")
    ap.add_argument("--ignore", help="comma-separated codes")
    ap.add_argument("--config", help="a [tool.numlint]-shaped JSON object")
    ap.add_argument("--cached", action="store_true", help="report on the stored findings")
    ap.add_argument("--check", action="store_true", help="exit 1 when a judged real hazard is lost")
    ap.add_argument("--code", action="append", default=[], help="unjudged: only these codes")
    ap.add_argument("--confidence", action="append", default=[], help="unjudged: only these levels")
    ap.add_argument("--limit", type=int, default=0, help="unjudged: show at most this many")
    ap.add_argument("--seed", type=int, help="unjudged: a seeded sample spread over rules")
    ap.add_argument("--context", type=int, default=8, help="unjudged: lines either side")
    args = ap.parse_args(argv)

    projects = load_projects()
    if args.project:
        projects = [p for p in projects if p.name in args.project]
    if args.command == "fetch":
        return fetch(projects)
    config: dict[str, Any] = json.loads(args.config) if args.config else {}
    if args.select:
        config["select"] = args.select.split(",")
    if args.ignore:
        config["ignore"] = args.ignore.split(",")
    stored = load() if args.cached or args.command in ("unjudged", "sample") else None
    if stored is None:
        start = time.perf_counter()
        findings, lines = lint(projects, config)
        elapsed = time.perf_counter() - start
        if not config and not args.project:
            save(findings, lines, elapsed)
        print(f"linted {sum(lines.values()):,} lines in {elapsed:.1f}s: {len(findings)} findings")
    else:
        findings, lines = stored
    if args.command == "run":
        return 0
    if args.command in ("unjudged", "sample"):
        seed = args.seed if args.seed is not None or args.command == "unjudged" else 0
        return unjudged(findings, args.code, args.limit, seed, args.context, args.confidence)
    return report(findings, lines, args.check, enabled_codes(config) if config else None)


if __name__ == "__main__":
    sys.exit(main())
