"""Where a cold run's time goes, against a baseline release: phase by phase, side by side.

static_speed.py says how much slower or faster a cold run is than a release; this says in
which phase: CPython's parse of each file (`syntax tree`), the choice of what to parse
(`reduce`), libcst's parse (`libcst parse`), the rules' walk with the facts they ask for
(`rules and facts`), and, inside that walk, the ast parse of the project's other files that
the cross-file facts read (`other files parsed`; absent in a release without them). One
process, no cache, CPU seconds; the two checkouts' runs interleaved, medians printed with
their ratio.

    python benchmarks/static_phases.py --baseline-ref be80624 --max-files 2072 --runs 3
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from static_speed import baseline_tree, build_corpus, median  # noqa: E402

#: Run in a child process with the checkout to time first on sys.path: lints the corpus in
#: one process and prints the CPU seconds of each phase as JSON.
CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
import numlint.chunks as chunks
import numlint.engine as engine
from numlint.api import lint_paths

spent = {}
clock = time.process_time


def timed(owner, name, phase):
    inner = getattr(owner, name)
    depth = [0]

    def wrapper(*args, **kwargs):
        if depth[0]:  # a phase counted once, however it recurses
            return inner(*args, **kwargs)
        depth[0] = 1
        start = clock()
        try:
            return inner(*args, **kwargs)
        finally:
            depth[0] = 0
            spent[phase] = spent.get(phase, 0.0) + clock() - start

    setattr(owner, name, wrapper)


timed(engine, "syntax_tree", "syntax tree")
timed(chunks, "reduce", "reduce")
timed(engine, "parse", "libcst parse")
timed(engine._Walker, "walk", "rules and facts")
try:
    import numlint.analysis.summaries as summaries
except ImportError:
    summaries = None
if summaries is not None and hasattr(summaries, "_parse"):
    parse_other = summaries._parse

    def parse_file(path, name, text, tree=None):
        if tree is not None:
            return parse_other(path, name, text, tree)
        start = clock()
        try:
            return parse_other(path, name, text, tree)
        finally:
            spent["other files parsed"] = spent.get("other files parsed", 0.0) + clock() - start

    summaries._parse = parse_file
start = clock()
for _ in lint_paths([sys.argv[2]], config={"no-cache": True}, jobs=1):
    pass
spent["total"] = clock() - start
print(json.dumps(spent))
"""

PHASES = (
    "syntax tree", "reduce", "libcst parse", "rules and facts", "other files parsed", "total",
)  # fmt: skip


def run(checkout: Path, corpus: Path) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(checkout), str(corpus)],
        capture_output=True, text=True, check=True, cwd=checkout,
    ).stdout  # fmt: skip
    return json.loads(out.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline-ref", required=True, help="a git commit or tag to compare with")
    ap.add_argument("--max-files", type=int, default=2072, help="a random sample of this many")
    ap.add_argument("--runs", type=int, default=3, help="runs of each, interleaved")
    args = ap.parse_args()
    corpus = build_corpus(args.max_files or None)
    checkouts = {"numlint": HERE.parent, "baseline": baseline_tree(args.baseline_ref)}
    times: dict[str, list[dict[str, float]]] = {name: [] for name in checkouts}
    for _ in range(args.runs):
        for name, checkout in checkouts.items():
            times[name].append(run(checkout, corpus))
            print(f"{name}: " + ", ".join(f"{k} {v:.1f}" for k, v in times[name][-1].items()))
    print(f"\nCPU seconds, medians of {args.runs} interleaved runs (one process, no cache):")
    print(f"{'phase':22} {'numlint':>9} {'baseline':>9} {'ratio':>7}")
    for phase in PHASES:
        mine = median([t.get(phase, 0.0) for t in times["numlint"]])
        theirs = median([t.get(phase, 0.0) for t in times["baseline"]])
        ratio = f"{mine / theirs:.2f}x" if theirs else "-"
        print(f"{phase:22} {mine:9.1f} {theirs:9.1f} {ratio:>7}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
