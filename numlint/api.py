"""The one pipeline behind every interface: CLI, pre-commit, language server, tests."""

from __future__ import annotations

import gc
import importlib
import io
import os
import tempfile
import tokenize
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from numlint import config as config_mod
from numlint.config import Config, Selection, rules_of
from numlint.diagnostic import Diagnostic, parse_error

if TYPE_CHECKING:
    from numlint.incremental import Incremental

# numlint.engine (libcst and the rules) is imported where a file is linted: a run whose
# results are all cached never loads it.

ConfigLike = Config | dict[str, Any] | None
#: A stress report's verdicts on findings: (findings, report path, file texts newer than the
#: disk) -> findings. `numlint.stress.verdict.judged`, passed in by the command line and the
#: language server (numlint.stress sits above this module and is never imported here).
Verdicts = Callable[[list[Diagnostic], str, dict[str, str]], list[Diagnostic]]
MAX_FIX_PASSES = 10
#: Below this many files to lint, a process pool costs more than it saves.
PARALLEL_THRESHOLD = 24


def resolve_config(
    config: ConfigLike, path: str, overrides: dict[str, Any] | None = None
) -> Config:
    """The configuration for `path`: given, or discovered from the path upward; then `overrides`
    (keyword arguments of Config.with_overrides, as command-line flags give them)."""
    if isinstance(config, Config):
        cfg = config
    elif isinstance(config, dict):
        cfg = Config.from_table(config)
    elif path and not path.startswith("<") and path != "-":
        cfg = config_mod.discover(path)
    else:
        cfg = Config()
    return cfg.with_overrides(**overrides) if overrides else cfg


def check_source(
    source: str,
    path: str = "<string>",
    config: ConfigLike = None,
    incremental: Incremental | None = None,
    verdicts: Verdicts | None = None,
) -> list[Diagnostic]:
    """Lint Python source text. `config` is a Config, a `[tool.numlint]`-shaped dict, or None
    (the configuration found from `path` upward, else the defaults). `incremental`: the
    state of a buffer linted before (an editor's), to re-lint only what changed.
    `verdicts`: applies the configuration's stress report, when it names one."""
    cfg = resolve_config(config, path)
    if source.startswith("\ufeff"):
        source = source[1:]
    from numlint.engine import lint

    found = lint(source, path, cfg.rules_for(path), reuse=incremental)
    return shown(cfg, found, verdicts, {path: source})


def shown(
    cfg: Config,
    diagnostics: list[Diagnostic],
    verdicts: Verdicts | None = None,
    sources: dict[str, str] | None = None,
) -> list[Diagnostic]:
    """The findings `cfg` shows: with a stress report and `verdicts`, after the report's
    verdicts (a finding the user's model confirmed is high, one it ran without an incident
    low); then those at or above its `min_confidence`. `sources`: file texts newer than the
    disk (an editor's buffer)."""
    if verdicts is not None and cfg.stress_report:
        diagnostics = verdicts(diagnostics, cfg.stress_report, sources or {})
    return cfg.shown(diagnostics)


class SourceError(Exception):
    """A file that is not readable Python text."""


def read_source(path: Path) -> tuple[str, str, str]:
    """Read a file as text: (text, encoding, newline). Raises SourceError with a clear reason."""
    try:
        data = path.read_bytes()
    except IsADirectoryError as exc:
        raise SourceError("is a directory") from exc
    except OSError as exc:
        raise SourceError(f"cannot read: {exc.strerror or exc}") from exc
    return decode(data)


def decode(data: bytes) -> tuple[str, str, str]:
    """Decode Python source bytes honouring a BOM or coding cookie (PEP 263)."""
    if b"\x00" in data:
        raise SourceError("not a text file (contains NUL bytes)")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        raise SourceError(f"bad coding cookie: {exc}") from exc
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        raise SourceError(f"not valid {encoding} text: {exc}") from exc
    if text.startswith("\ufeff"):
        text = text[1:]
    newline = "\r\n" if "\r\n" in text else ("\r" if "\r" in text and "\n" not in text else "\n")
    return text, encoding, newline


def iter_files(
    paths: Iterable[str | Path],
    config: ConfigLike = None,
    overrides: dict[str, Any] | None = None,
    force_exclude: bool = False,
) -> Iterator[Path]:
    """Python files under `paths`: directories are walked with exclusions applied; files named
    explicitly are always included unless `force_exclude` (for pre-commit, which names files).

    Raises FileNotFoundError for a path that does not exist.
    """
    seen: set[Path] = set()
    for given in paths:
        p = Path(given)
        if not p.exists() and not p.is_symlink():
            raise FileNotFoundError(str(given))
        if force_exclude and excluded(p, resolve_config(config, str(p), overrides)):
            continue
        if not p.is_dir():
            if p not in seen:
                seen.add(p)
                yield p
            continue
        cfg_root = resolve_config(config, str(p), overrides)
        visited: set[tuple[int, int]] = set()
        for root, dirs, files in os.walk(p, followlinks=False):
            here = Path(root)
            try:
                st = here.stat()
                key = (st.st_dev, st.st_ino)
            except OSError:
                continue
            if key in visited:
                dirs[:] = []
                continue
            visited.add(key)
            cfg = cfg_root if config is not None else resolve_config(None, str(here), overrides)
            dirs[:] = sorted(d for d in dirs if not cfg.is_excluded(here / d))
            for name in sorted(files):
                f = here / name
                if name.endswith((".py", ".pyi")) and not cfg.is_excluded(f) and f not in seen:
                    seen.add(f)
                    yield f


def excluded(path: Path, cfg: Config) -> bool:
    """Whether `path` or one of its parent directories (below the config root) is excluded."""
    if cfg.is_excluded(path):
        return True
    root = (cfg.root or Path.cwd()).resolve()
    for parent in path.resolve().parents:
        if parent == root or root not in parent.parents:
            break
        if cfg.is_excluded(parent):
            return True
    return False


def check_file(
    path: Path,
    config: ConfigLike = None,
    overrides: dict[str, Any] | None = None,
    verdicts: Verdicts | None = None,
) -> list[Diagnostic]:
    """Lint one file on disk; unreadable or undecodable files give a NUM000 finding."""
    name = str(path)
    try:
        text, _, _ = read_source(path)
    except SourceError as exc:
        return [parse_error(name, f"could not read: {exc}")]
    return check_source(text, name, resolve_config(config, name, overrides), verdicts=verdicts)


def config_per_directory(
    config: ConfigLike = None, overrides: dict[str, Any] | None = None
) -> Callable[[Path], Config]:
    """The configuration of a file, found once per directory: a file's configuration is its
    directory's (a file that is a link: its target's)."""
    found: dict[Path, Config] = {}

    def of(f: Path) -> Config:
        link = f.is_symlink()
        cfg = None if link else found.get(f.parent)
        if cfg is None:
            cfg = resolve_config(config, str(f), overrides)
            if not link:
                found[f.parent] = cfg
        return cfg

    return of


def _rules_key(cfg: Config, name: str, memo: dict[Config, Selection]) -> Selection:
    """What decides a file's rules, kept in `memo` per configuration when it does not depend
    on the file's path."""
    shared = not cfg.per_file_ignores
    if shared:
        try:
            return memo[cfg]
        except KeyError:
            pass
        except TypeError:  # an option holding a list: not hashable
            shared = False
    spec = cfg.selection(name)
    if shared:
        memo[cfg] = spec
    return spec


#: The cyclic collector's thresholds while linting many files: syntax trees are freed by
#: reference counting, and collecting every 700 allocations (Python's default) among
#: millions of tree nodes costs about a tenth of a corpus run.
GC_THRESHOLD = (50_000, 20, 100)


def _worker_start() -> None:
    """A worker process: collect cycles less often (GC_THRESHOLD)."""
    gc.set_threshold(*GC_THRESHOLD)


def _check_bytes(job: tuple[str, bytes, Selection]) -> tuple[list[Diagnostic], list[str]]:
    """Worker: lint one file's bytes with the rules a selection enables; also the other
    files its findings depend on."""
    from numlint.engine import lint

    name, data, spec = job
    try:
        text, _, _ = decode(data)
    except SourceError as exc:
        return [parse_error(name, f"could not read: {exc}")], []
    deps: set[str] = set()
    return lint(text, name, rules_of(spec), dependencies=deps), sorted(deps)


def _check_many(
    jobs: list[tuple[str, bytes, Selection]],
) -> list[tuple[list[Diagnostic], list[str]]]:
    """Worker: lint several files (one project's, see _by_project)."""
    return [_check_bytes(job) for job in jobs]


def _by_project(names: list[str], workers: int) -> list[list[int]]:
    """The indices of `names` in tasks for `workers` processes, largest first: the files of
    one project (summaries.project_root) together, so that one process reads and parses
    what the cross-file searches read of a project, not every process; a project of more
    than a quarter of a process's share is split, so that the processes finish together."""
    from numlint.analysis.summaries import project_root

    groups: dict[str, list[int]] = {}
    for i, name in enumerate(names):
        root = project_root(os.path.abspath(name)) if not name.startswith("<") else name
        groups.setdefault(root, []).append(i)
    most = max(1, -(-len(names) // (workers * 4)))
    tasks = [g[s : s + most] for g in groups.values() for s in range(0, len(g), most)]
    tasks.sort(key=len, reverse=True)
    return tasks


def lint_paths(
    paths: Iterable[str | Path],
    config: ConfigLike = None,
    overrides: dict[str, Any] | None = None,
    *,
    cache: bool = False,
    jobs: int | None = None,
    force_exclude: bool = False,
    verdicts: Verdicts | None = None,
) -> Iterator[tuple[Path, list[Diagnostic]]]:
    """(file, findings) for every Python file under `paths`, in order.

    With `cache=True` unchanged files reuse their results from `.numlint_cache/`; files still
    to lint are spread over `jobs` processes (default: one per core) when there are many.
    `verdicts`: applies each file's configured stress report (see check_source).
    """
    from numlint.cache import ResultCache, key

    results = ResultCache() if cache else None
    files = list(iter_files(paths, config, overrides, force_exclude))
    done: dict[int, list[Diagnostic]] = {}
    todo: list[tuple[int, str, tuple[str, bytes, Any]]] = []
    specs: dict[Config, Selection] = {}
    config_of = config_per_directory(config, overrides)
    for i, f in enumerate(files):
        name = str(f)
        try:
            data = f.read_bytes()
        except IsADirectoryError:
            done[i] = [parse_error(name, "could not read: is a directory")]
            continue
        except OSError as exc:
            done[i] = [parse_error(name, f"could not read: {exc.strerror or exc}")]
            continue
        spec = _rules_key(config_of(f), name, specs)
        k = key(data, repr(spec)) if results is not None else ""
        hit = results.get(k, name) if results is not None else None
        if hit is not None:
            done[i] = hit
        else:
            todo.append((i, k, (name, data, spec)))
    workers = jobs or os.cpu_count() or 1
    if workers > 1 and len(todo) >= PARALLEL_THRESHOLD:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
        tasks = _by_project([job[0] for _, _, job in todo], workers)
        if method == "fork":  # the engine and rules loaded once here, not in every worker
            importlib.import_module("numlint.engine")
            rules_of(todo[0][2][2])
            gc.freeze()  # what is loaded now is never garbage: the workers' collector skips it
        pool = ProcessPoolExecutor(
            workers, mp_context=multiprocessing.get_context(method), initializer=_worker_start
        )
        found: list[tuple[list[Diagnostic], list[str]]] = [([], [])] * len(todo)
        try:
            with pool:
                outs = pool.map(_check_many, [[todo[i][2] for i in t] for t in tasks])
                for task, out in zip(tasks, outs, strict=True):
                    for i, one in zip(task, out, strict=True):
                        found[i] = one  # back in the order of the files
        finally:
            if method == "fork":
                gc.unfreeze()
    else:
        threshold = gc.get_threshold()
        gc.set_threshold(*GC_THRESHOLD)
        try:
            found = [_check_bytes(job) for _, _, job in todo]
        finally:
            gc.set_threshold(*threshold)
    for (i, k, _), (diags, deps) in zip(todo, found, strict=True):
        done[i] = diags
        if results is not None:
            results.put(k, diags, deps)
    if results is not None:
        results.save()
    for i, f in enumerate(files):
        yield f, shown(config_of(f), done[i], verdicts)


def check_paths(
    paths: Iterable[str | Path], config: ConfigLike = None, verdicts: Verdicts | None = None
) -> list[Diagnostic]:
    """Lint files and directories. Raises FileNotFoundError for a missing path."""
    return [d for _, diags in lint_paths(paths, config, verdicts=verdicts) for d in diags]


@dataclass
class FixResult:
    source: str
    fixed: int
    remaining: list[Diagnostic]
    error: str | None = None


def fix_source(
    source: str,
    path: str = "<string>",
    config: ConfigLike = None,
    unsafe: bool = False,
    overrides: dict[str, Any] | None = None,
    verdicts: Verdicts | None = None,
) -> FixResult:
    """Apply fixes until none is left (at most MAX_FIX_PASSES); the result must parse.
    `verdicts`: as for check_source (the findings that remain carry them)."""
    from numlint.engine import apply_fixes, parse

    cfg = resolve_config(config, path, overrides)
    current, total = source, 0
    diagnostics = check_source(current, path, cfg, verdicts=verdicts)
    for _ in range(MAX_FIX_PASSES):
        new, count = apply_fixes(current, diagnostics, unsafe=unsafe)
        if count == 0 or new == current:
            break
        try:
            parse(new)
        except Exception as exc:  # a fix must never produce code that does not parse
            return FixResult(current, total, diagnostics, f"fix result did not parse: {exc}")
        current, total = new, total + count
        diagnostics = check_source(current, path, cfg, verdicts=verdicts)
    return FixResult(current, total, diagnostics)


def write_atomic(path: Path, text: str, encoding: str) -> None:
    """Write via a temporary file in the same directory and rename; keep the file mode.
    A symbolic link is written through: its target changes, the link stays."""
    path = Path(os.path.realpath(path))
    mode = path.stat().st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".numlint", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding=encoding, newline="") as fh:
            fh.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
