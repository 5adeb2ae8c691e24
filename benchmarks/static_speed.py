"""Static engine speed: numlint (cold and warm) against TorchFix, Fixit and libcst parse-only.

Builds a corpus of real PyTorch code (pinned wheels of timm, transformers and
pytorch-lightning, downloaded into benchmarks/.corpus, plus the installed torch package's own
sources), installs TorchFix and Fixit each in its own virtual environment under
benchmarks/.envs, and times every tool on the same files in one run. Prints times and ratios.

    python benchmarks/static_speed.py                 # the whole corpus
    python benchmarks/static_speed.py --max-files 300 # a quicker, smaller sample
    python benchmarks/static_speed.py --skip-peers    # numlint and libcst only
    python benchmarks/static_speed.py --skip-peers --max-files 2000 --baseline-ref v1.2
                                                      # against a release, side by side
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import venv
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE / ".corpus"
ENVS = HERE / ".envs"
WHEELS = ["timm==1.0.11", "transformers==4.46.1", "pytorch-lightning==2.4.0"]
PEERS = {"torchfix": ["torchfix==0.7.0"], "fixit": ["fixit==2.2.1"]}
#: A cold run's CPU time at most this many times the baseline's (--baseline, --baseline-ref).
MAX_COLD_RATIO = 1.1
#: A warm run (the cache holds every file's findings) at most this many seconds.
MAX_WARM_S = 0.3


def build_corpus(max_files: int | None, seed: int = 0) -> Path:
    """Unpack the pinned wheels' and torch's .py files into one tree; return its root."""
    wheels = CORPUS / "wheels"
    src = CORPUS / "src"
    if not (src / ".done").exists():
        wheels.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                "-d",
                str(wheels),
                *WHEELS,
            ],
            check=True,
        )
        shutil.rmtree(src, ignore_errors=True)
        for whl in wheels.glob("*.whl"):
            with zipfile.ZipFile(whl) as z:
                for name in z.namelist():
                    if name.endswith(".py"):
                        z.extract(name, src / whl.name.split("-")[0])
        import torch

        torch_root = Path(torch.__file__).parent
        for path in torch_root.rglob("*.py"):
            dest = src / "torch" / path.relative_to(torch_root.parent)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dest)
        (src / ".done").write_text("")
    if not max_files:
        return src
    sample = CORPUS / f"sample-{max_files}"
    if not sample.exists():
        files = sorted(src.rglob("*.py"))
        random.Random(seed).shuffle(files)
        for f in files[:max_files]:
            dest = sample / f.relative_to(src)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f, dest)
    return sample


def peer_env(name: str) -> Path:
    env = ENVS / name
    py = env / "bin" / "python"
    if not (env / ".done").exists():
        venv.create(env, with_pip=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", *PEERS[name]], check=True)
        (env / ".done").write_text("")
    return env


def timed(
    cmd: list[str], cwd: Path | None = None, env: dict | None = None, cpu: list | None = None
) -> tuple[float, int]:
    """Wall time of a command, and the peak RSS (MiB) of its largest process; its CPU time
    (user + system, its processes together) is appended to `cpu`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    elapsed = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if cpu is not None:
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return elapsed, max(before.ru_maxrss, after.ru_maxrss) // 1024


def baseline_tree(ref: str) -> Path:
    """A `git worktree` of this repository at `ref` (made once, under benchmarks/.baseline)."""
    repo = HERE.parent
    sha = subprocess.run(
        ["git", "rev-parse", "--verify", f"{ref}^{{commit}}"],
        cwd=repo, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    tree = HERE / ".baseline" / sha[:12]
    if not (tree / "numlint").exists():
        subprocess.run(["git", "worktree", "prune"], cwd=repo, check=True)
        subprocess.run(["git", "worktree", "add", "--detach", str(tree), sha], cwd=repo, check=True)
    return tree


PARSE_ONLY = """
import sys, time, libcst
from pathlib import Path
files = sorted(Path(sys.argv[1]).rglob('*.py'))
t = time.perf_counter()
for f in files:
    try:
        libcst.parse_module(f.read_bytes())
    except Exception:
        pass
print(time.perf_counter() - t)
"""


def median(values: list[float]) -> float:
    values = sorted(values)
    n = len(values)
    return values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2


def side_by_side(
    numlint: list[str], env: dict, corpus: Path, baseline: Path, cache_dir: Path, runs: int = 3
) -> tuple[dict[str, tuple[float, int]], float]:
    """Cold and warm times of this numlint and of the one in `baseline`, runs interleaved;
    medians, and the ratio of the cold CPU medians. Prints each cold run's CPU time (user +
    system, every process: steadier than wall time on a busy machine)."""
    other = {**env, "PYTHONPATH": str(baseline), "NUMLINT_CACHE_DIR": str(cache_dir) + "-base"}
    subprocess.run(
        [*numlint, "--no-cache", "-"], input=b"", cwd=baseline, env=other, capture_output=True
    )
    cold: dict[str, list[tuple[float, int]]] = {"numlint": [], "baseline": []}
    cpu: dict[str, list[float]] = {"numlint": [], "baseline": [], "warm": [], "base warm": []}
    for _ in range(runs):
        cold["numlint"].append(
            timed([*numlint, "--no-cache", str(corpus)], env=env, cpu=cpu["numlint"])
        )
        cold["baseline"].append(
            timed(
                [*numlint, "--no-cache", str(corpus)], cwd=baseline, env=other, cpu=cpu["baseline"]
            )
        )
    timed([*numlint, str(corpus)], env=env)
    timed([*numlint, str(corpus)], cwd=baseline, env=other)
    warm: dict[str, list[tuple[float, int]]] = {"numlint": [], "baseline": []}
    for _ in range(5):
        warm["numlint"].append(timed([*numlint, str(corpus)], env=env, cpu=cpu["warm"]))
        warm["baseline"].append(
            timed([*numlint, str(corpus)], cwd=baseline, env=other, cpu=cpu["base warm"])
        )
    for name, times in cpu.items():
        print(f"CPU seconds, {name}: " + " ".join(f"{t:.2f}" for t in times))
    mine, theirs = median(cpu["numlint"]), median(cpu["baseline"])
    print(f"cold CPU medians: numlint {mine:.1f} s, baseline {theirs:.1f} s: {mine / theirs:.2f}x")
    print(
        f"warm CPU medians: numlint {median(cpu['warm']):.2f} s, "
        f"baseline {median(cpu['base warm']):.2f} s: "
        f"{median(cpu['warm']) / median(cpu['base warm']):.2f}x"
    )
    walls = {k: [t for t, _ in v] for k, v in warm.items()}
    print(
        "warm wall times: numlint " + " ".join(f"{t:.2f}" for t in walls["numlint"])
        + "; baseline " + " ".join(f"{t:.2f}" for t in walls["baseline"])
        + f": medians {median(walls['numlint']):.2f} s against {median(walls['baseline']):.2f} s"
        + f" ({median(walls['numlint']) / median(walls['baseline']):.2f}x)"
    )  # fmt: skip
    mid = runs // 2
    rows = {
        "numlint cold (2 processes, no cache)": sorted(cold["numlint"])[mid],
        "baseline cold": sorted(cold["baseline"])[mid],
        "numlint warm (cache, median of 5)": sorted(warm["numlint"])[2],
        "baseline warm": sorted(warm["baseline"])[2],
    }
    return rows, mine / theirs


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-files", type=int, default=0, help="a random sample of this many files")
    ap.add_argument("--skip-peers", action="store_true", help="do not run TorchFix and Fixit")
    ap.add_argument("--only-fixit", action="store_true", help="of the peers, run Fixit only")
    ap.add_argument(
        "--baseline",
        type=Path,
        help="another numlint checkout (e.g. a `git worktree` of an older commit) timed side "
        "by side, cold and warm, runs interleaved",
    )
    ap.add_argument(
        "--baseline-ref",
        help="a git commit or tag of this repository timed side by side as --baseline does "
        "(from a worktree made under benchmarks/.baseline)",
    )
    ap.add_argument("--runs", type=int, default=3, help="cold runs of each, side by side")
    args = ap.parse_args()
    if args.baseline_ref:
        args.baseline = baseline_tree(args.baseline_ref)
    corpus = build_corpus(args.max_files or None)
    files = list(corpus.rglob("*.py"))
    lines = sum(f.read_bytes().count(b"\n") for f in files)
    print(f"corpus: {len(files)} files, {lines / 1000:.0f}k lines ({corpus})")
    numlint = [
        sys.executable,
        "-m",
        "numlint",
        "check",
        "--exit-zero",
        "-q",
        "--output-format",
        "concise",
        "--isolated",  # the corpus sits inside this repository, whose configuration excludes it
    ]
    cache_dir = CORPUS / "cache"
    # As installed on a user's machine: with bytecode caches (a first run writes them).
    env = {**os.environ, "NUMLINT_CACHE_DIR": str(cache_dir)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([*numlint, "--no-cache", "-"], input=b"", env=env, capture_output=True)
    rows: dict[str, tuple[float, int]] = {}
    shutil.rmtree(cache_dir, ignore_errors=True)
    cpu_ratio = 0.0
    if args.baseline is not None:
        found, cpu_ratio = side_by_side(
            numlint, env, corpus, args.baseline.resolve(), cache_dir, args.runs
        )
        rows.update(found)
    else:
        rows["numlint cold (2 processes, no cache)"] = timed(
            [*numlint, "--no-cache", str(corpus)], env=env
        )
        timed([*numlint, str(corpus)], env=env)  # fill the cache
        warm = [timed([*numlint, str(corpus)], env=env) for _ in range(5)]
        rows["numlint warm (cache, median of 5)"] = sorted(warm)[2]
    parse_out = subprocess.run(
        [sys.executable, "-c", PARSE_ONLY, str(corpus)], capture_output=True, text=True, check=True
    )
    rows["libcst parse-only (1 core)"] = (float(parse_out.stdout), 0)
    if not args.skip_peers:
        if not args.only_fixit:
            tf = peer_env("torchfix") / "bin" / "torchfix"
            rows["TorchFix 0.7.0"] = timed([str(tf), str(corpus)])
        fx = peer_env("fixit") / "bin" / "fixit"
        # Fixit skips git-ignored files (the corpus is ignored here): lint a copy outside the repo
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / "corpus"
            shutil.copytree(corpus, copy)
            rows["Fixit 2.2.1"] = timed([str(fx), "lint", "."], cwd=copy)
    cold = rows["numlint cold (2 processes, no cache)"][0]
    print(f"{'tool':<40} {'seconds':>9} {'peak MiB':>9} {'x numlint cold':>15}")
    for name, (secs, mem) in rows.items():
        print(f"{name:<40} {secs:>9.2f} {mem or '':>9} {secs / cold:>15.1f}")
    peers = {n: t for n, (t, _) in rows.items() if n.startswith(("TorchFix", "Fixit"))}
    verdicts = [
        ("cold at least 30x faster than each peer", all(t / cold >= 30 for t in peers.values())),
        ("cold faster than libcst parse-only", cold < rows["libcst parse-only (1 core)"][0]),
        (
            f"warm at most {MAX_WARM_S} s",
            rows["numlint warm (cache, median of 5)"][0] <= MAX_WARM_S,
        ),
        ("peak memory under 1 GB", max(m for _, m in rows.values()) < 1024),
    ]
    if "baseline cold" in rows:
        ratio = cold / rows["baseline cold"][0]
        verdicts.append(
            (
                f"cold at most {MAX_COLD_RATIO}x the baseline's in CPU time (now {cpu_ratio:.2f}x; "
                f"wall time {ratio:.2f}x)",
                cpu_ratio <= MAX_COLD_RATIO,
            )
        )
    for what, ok in verdicts:
        if what.startswith("cold at least") and not peers:
            continue
        print(f"target {what}: {'met' if ok else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
