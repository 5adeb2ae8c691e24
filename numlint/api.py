"""The one pipeline behind every interface: CLI, pre-commit, language server, tests."""

from __future__ import annotations

import gc
import importlib
import os
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
    import io
    import tokenize

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
    *,
    resolver: ConfigResolver | None = None,
) -> Iterator[Path]:
    """Python files under `paths`: directories are walked with exclusions applied; files named
    explicitly are always included unless `force_exclude` (for pre-commit, which names files).
    `resolver`: the run's ConfigResolver (of `config` and `overrides`), to share what it found.

    Raises FileNotFoundError for a path that does not exist.
    """
    configs = resolver if resolver is not None else ConfigResolver(config, overrides)
    for name in _file_names(paths, configs, force_exclude):
        yield Path(name)


def _file_names(
    paths: Iterable[str | Path], configs: ConfigResolver, force_exclude: bool
) -> Iterator[str]:
    """iter_files' files as the names `str(path)` gives: no Path is built per file (a run
    whose findings are all cached spends most of its time walking)."""
    seen: set[str] = set()
    for given in paths:
        p = Path(given)
        if not p.exists() and not p.is_symlink():
            raise FileNotFoundError(str(given))
        if force_exclude and excluded(p, configs.of_path(p)):
            continue
        if not p.is_dir():
            if str(p) not in seen:
                seen.add(str(p))
                yield str(p)
            continue
        top = os.fspath(p)
        visited: set[tuple[int, int]] = set()
        #: The configuration of each directory walked.
        found: dict[str, Config] = {}
        for root, dirs, files in _walk(top):
            here = Path(root)
            try:
                st = os.stat(root)
                key = (st.st_dev, st.st_ino)
            except OSError:
                continue
            if key in visited:
                dirs[:] = []
                continue
            visited.add(key)
            above = found.get(_parent(root)) if root != top else None
            if above is not None and not any(name == "pyproject.toml" for name, _ in files):
                # a directory below one walked, without a configuration file: the same
                # configuration (found from the same pyproject.toml files upward)
                cfg = configs.known_directory(here, above)
            else:
                cfg = configs.of_directory(here)
            found[root] = cfg
            dirs[:] = sorted(d for d in dirs if not cfg.excludes(here, d))
            for name, link in sorted(files):
                if not name.endswith((".py", ".pyi")) or cfg.excludes(here, name):
                    continue
                text = _join(root, name)
                if text not in seen:
                    seen.add(text)
                    if not link:
                        configs.known_file(text, cfg)
                    yield text


def _join(directory: str, name: str) -> str:
    """`str(Path(directory) / name)` for a directory name as Path writes it."""
    if directory == ".":
        return name
    return directory + name if directory.endswith(os.sep) else directory + os.sep + name


def _parent(directory: str) -> str:
    """The directory above one _walk yields, as _walk wrote it."""
    parent = os.path.dirname(directory)
    return parent or "."


def _walk(top: str) -> Iterator[tuple[str, list[str], list[tuple[str, bool]]]]:
    """`os.walk(top)` (top-down, not into links to directories; the caller may prune
    `dirs`), the files with whether each is a symbolic link."""
    try:
        with os.scandir(top) as it:
            entries = list(it)
    except OSError:
        return
    dirs: list[str] = []
    links: set[str] = set()
    files: list[tuple[str, bool]] = []
    for entry in entries:
        try:
            is_dir = entry.is_dir()
        except OSError:
            is_dir = False
        try:
            link = entry.is_symlink()
        except OSError:
            link = False
        if is_dir:
            dirs.append(entry.name)
            if link:
                links.add(entry.name)
        else:
            files.append((entry.name, link))
    yield top, dirs, files
    for name in dirs:
        if name not in links:
            yield from _walk(_join(top, name))


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


class ConfigResolver:
    """The configurations of one run: each directory's found once (discovery from it upward,
    then the overrides), shared by the file walk, the linting and the command line's
    warnings. A file's configuration is its directory's; a file that is a link: its
    target's. Configuration files changed during the run are not seen again."""

    def __init__(self, config: ConfigLike = None, overrides: dict[str, Any] | None = None):
        self.overrides = overrides
        #: The configuration of every path when one is given (not discovered).
        self.fixed: Config | None = None
        if config is not None:
            self.fixed = resolve_config(config, "", overrides)
        self._directories: dict[str, Config] = {}
        self._files: dict[str, Config] = {}

    def known_directory(self, directory: Path | str, cfg: Config) -> Config:
        """Record the configuration of `directory` (found while walking); return it."""
        if self.fixed is not None:
            return self.fixed
        self._directories[os.fspath(directory) or "."] = cfg
        return cfg

    def known_file(self, f: str, cfg: Config) -> None:
        """Record the configuration of the file `f`, not a link (found while walking)."""
        if self.fixed is None:
            self._files[f] = cfg

    def of_directory(self, directory: Path | str) -> Config:
        """The configuration of the files in `directory`."""
        if self.fixed is not None:
            return self.fixed
        name = os.fspath(directory) or "."
        cfg = self._directories.get(name)
        if cfg is None:
            cfg = self._directories[name] = resolve_config(None, name, self.overrides)
        return cfg

    def of_path(self, path: Path | str) -> Config:
        """The configuration of a file or directory (as resolve_config finds it)."""
        if self.fixed is not None:
            return self.fixed
        name = os.fspath(path)
        if os.path.isdir(name) and not os.path.islink(name):
            return self.of_directory(name)
        return self(name)

    def __call__(self, f: Path | str) -> Config:
        """The configuration of the file `f`."""
        if self.fixed is not None:
            return self.fixed
        name = os.fspath(f)
        cfg = self._files.get(name)
        if cfg is None:
            if name.startswith("<") or name == "-" or os.path.islink(name):
                cfg = resolve_config(None, name, self.overrides)
            else:
                cfg = self.of_directory(os.path.dirname(name))
            self._files[name] = cfg
        return cfg


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
    resolver: ConfigResolver | None = None,
) -> Iterator[tuple[Path, list[Diagnostic]]]:
    """(file, findings) for every Python file under `paths`, in order.

    With `cache=True` unchanged files reuse their results from `.numlint_cache/` (a file
    whose status is unchanged is not even read: numlint.cache); files still to lint are
    spread over `jobs` processes (default: one per core) when there are many.
    `verdicts`: applies each file's configured stress report (see check_source).
    `resolver`: the run's ConfigResolver (of `config` and `overrides`), for a caller that
    wants the files' configurations too without finding them again.
    """
    for name, found in lint_names(
        paths,
        config,
        overrides,
        cache=cache,
        jobs=jobs,
        force_exclude=force_exclude,
        verdicts=verdicts,
        resolver=resolver,
    ):
        yield Path(name), found


def lint_names(
    paths: Iterable[str | Path],
    config: ConfigLike = None,
    overrides: dict[str, Any] | None = None,
    *,
    cache: bool = False,
    jobs: int | None = None,
    force_exclude: bool = False,
    verdicts: Verdicts | None = None,
    resolver: ConfigResolver | None = None,
) -> Iterator[tuple[str, list[Diagnostic]]]:
    """lint_paths with each file named by its path's text (no Path built per file)."""
    from numlint.cache import ResultCache, key, rules_digest

    results = ResultCache() if cache else None
    config_of = resolver if resolver is not None else ConfigResolver(config, overrides)
    files = list(_file_names(paths, config_of, force_exclude))
    done: dict[int, list[Diagnostic]] = {}
    todo: list[tuple[int, str, tuple[str, bytes, Any]]] = []
    specs: dict[Config, Selection] = {}
    #: Per selection (by identity; kept alive in the value): its repr and rules_digest.
    spec_keys: dict[int, tuple[Selection, str, str]] = {}
    stats: dict[int, tuple[os.stat_result, str]] = {}
    for i, name in enumerate(files):
        spec = _rules_key(config_of(name), name, specs)
        rules = digest = ""
        st = None
        if results is not None:
            known = spec_keys.get(id(spec))
            if known is None:
                text = repr(spec)
                known = spec_keys[id(spec)] = (spec, text, rules_digest(text))
            _, rules, digest = known
            try:
                st = os.stat(name)
            except OSError:
                st = None  # reading it says why
            if st is not None:
                by_stat = results.get_by_stat(name, st, digest)
                if by_stat is not None:
                    done[i] = by_stat[1]
                    continue
                stats[i] = (st, digest)
        try:
            data = Path(name).read_bytes()
        except IsADirectoryError:
            done[i] = [parse_error(name, "could not read: is a directory")]
            continue
        except OSError as exc:
            done[i] = [parse_error(name, f"could not read: {exc.strerror or exc}")]
            continue
        k = key(data, rules) if results is not None else ""
        hit = results.get(k, name) if results is not None else None
        if hit is not None:
            done[i] = hit
            if st is not None:
                results.remember(name, st, digest, k)
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
            if i in stats:
                st, digest = stats[i]
                results.remember(files[i], st, digest, k)
    if results is not None:
        results.save()
    for i, name in enumerate(files):
        yield name, shown(config_of(name), done[i], verdicts)


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
    import tempfile

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
