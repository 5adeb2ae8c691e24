"""`[tool.numlint]` in pyproject.toml: discovery, validation and rule selection."""

from __future__ import annotations

import fnmatch
import os
import sys
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from numlint.diagnostic import (
    CONFIDENCES,
    DEFAULT_MIN_CONFIDENCE,
    Diagnostic,
    confidence_rank,
)
from numlint.requirements import TARGET_TORCH, declared_torch, parse_version, stamp

if TYPE_CHECKING:  # the rules import libcst: a run whose results are all cached needs neither
    from numlint.rule import Rule

#: One level of rule selection: (select or None, extend-select, ignore).
Layer = tuple[tuple[str, ...] | None, tuple[str, ...], tuple[str, ...]]
#: What decides a file's rules: (layers, per-file ignores, options, target torch version);
#: see Config.selection.
Selection = tuple[Any, ...]


def _tomllib() -> Any:
    """tomllib (tomli before Python 3.11), loaded once a pyproject.toml is read."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    return tomllib


def __getattr__(name: str) -> Any:
    if name == "tomllib":  # `from numlint.config import tomllib` goes on working
        return _tomllib()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


DEFAULT_EXCLUDE = (
    ".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", ".eggs", "build", "dist",
    "__pycache__", "site-packages", "node_modules", ".mypy_cache", ".ruff_cache",
    ".pytest_cache", ".numlint_cache",
)  # fmt: skip

_LIST_KEYS = ("select", "extend-select", "ignore", "extend-ignore", "exclude", "extend-exclude")
KNOWN_KEYS = frozenset(
    {*_LIST_KEYS, "per-file-ignores", "options", "min-confidence", "stress-report", TARGET_TORCH}
)


class ConfigError(ValueError):
    """A configuration file that cannot be used at all (not TOML, wrong types)."""


@dataclass(frozen=True)
class Config:
    """Settings for one tree. `select=None` means the default rule set."""

    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    options: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = ()
    root: Path | None = None
    source: Path | None = None
    warnings: tuple[str, ...] = field(default=(), compare=False)
    #: Findings below this confidence are not shown (numlint.diagnostic.CONFIDENCES).
    min_confidence: str = DEFAULT_MIN_CONFIDENCE
    #: The command line's (select, extend-select, ignore), applied after the file's: as in
    #: ruff, `--select` starts again, `--extend-select` re-enables what the file ignores.
    cli: Layer | None = None
    #: A `numlint.stress` report file (resolved against the pyproject's directory) whose
    #: verdicts the findings carry.
    stress_report: str | None = None
    #: The lowest torch version to support ("2.1"): `target-torch-version`, else what the
    #: project declares (numlint.requirements); None: every version (fixes may use the newest API).
    target_torch_version: str | None = None

    def shown(self, diagnostics: list[Diagnostic]) -> list[Diagnostic]:
        """The findings at or above `min_confidence` (a stress report's verdicts, which
        change confidences, are applied before: numlint.api.shown)."""
        least = confidence_rank(self.min_confidence)
        if least == 0:
            return diagnostics
        return [d for d in diagnostics if confidence_rank(d.confidence) >= least]

    @classmethod
    def from_table(
        cls, table: dict[str, Any], root: Path | None = None, source: Path | None = None
    ) -> Config:
        """Build from a `[tool.numlint]` table, collecting warnings for unknown keys and codes."""
        where = f" in {source}" if source else ""
        warnings: list[str] = []
        for key in table:
            if key not in KNOWN_KEYS:
                warnings.append(f"unknown key `{key}` in [tool.numlint]{where}")
        lists: dict[str, tuple[str, ...]] = {}
        for key in _LIST_KEYS:
            value = table.get(key, [])
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ConfigError(
                    f"`{key}` in [tool.numlint]{where} must be a list of strings, "
                    f"not {_toml_type(value)}"
                )
            lists[key] = tuple(value)
        for key in ("select", "extend-select", "ignore", "extend-ignore"):
            _check_selectors(lists[key], f"`{key}` in [tool.numlint]{where}")
        pfi = table.get("per-file-ignores", {})
        if not isinstance(pfi, dict):
            raise ConfigError(f"`per-file-ignores`{where} must be a table of glob = [codes]")
        per_file = []
        for glob, codes in pfi.items():
            if not isinstance(codes, list) or not all(isinstance(c, str) for c in codes):
                raise ConfigError(
                    f'`per-file-ignores."{glob}"`{where} must be a list of strings, '
                    f"not {_toml_type(codes)}"
                )
            _check_selectors(codes, f'`per-file-ignores."{glob}"`{where}')
            per_file.append((glob, tuple(codes)))
        options = []
        raw_options = table.get("options", {})
        if not isinstance(raw_options, dict):
            raise ConfigError(f"`options`{where} must be a table of rule tables")
        for code, opts in raw_options.items():
            rule = _rule(code)
            if rule is None:
                raise ConfigError(
                    f"unknown rule `{code}` in [tool.numlint.options]{where} "
                    "(a rule's code or name; see `numlint rules`)"
                )
            if not isinstance(opts, dict):
                raise ConfigError(f"[tool.numlint.options.{code}]{where} must be a table")
            for key in opts:
                if key not in rule.OPTIONS:
                    known = ", ".join(sorted(rule.OPTIONS)) or "none"
                    warnings.append(
                        f"unknown option `{key}` for {rule.CODE}{where} (known: {known})"
                    )
            options.append((rule.CODE, tuple((k, v) for k, v in opts.items() if k in rule.OPTIONS)))
        select = table.get("select")
        least = table.get("min-confidence", DEFAULT_MIN_CONFIDENCE)
        if not isinstance(least, str) or least not in CONFIDENCES:
            raise ConfigError(
                f"`min-confidence`{where} must be one of {', '.join(map(repr, CONFIDENCES))}"
            )
        report = table.get("stress-report")
        if report is not None and (not isinstance(report, str) or not report):
            raise ConfigError(f"`stress-report`{where} must be a path (a string)")
        if report is not None and root is not None:
            report = os.path.join(root, report)
        target = table.get(TARGET_TORCH)
        if target is not None and (not isinstance(target, str) or parse_version(target) is None):
            shown = repr(target) if isinstance(target, str) else _toml_type(target)
            raise ConfigError(
                f'`{TARGET_TORCH}`{where} must be a torch version such as "2.1" '
                f"(a string), not {shown}"
            )
        return cls(
            select=lists["select"] if select is not None else None,
            extend_select=lists["extend-select"],
            ignore=lists["ignore"] + lists["extend-ignore"],
            exclude=lists["exclude"] + lists["extend-exclude"],
            per_file_ignores=tuple(per_file),
            options=tuple(options),
            root=root,
            source=source,
            warnings=tuple(warnings),
            min_confidence=least,
            stress_report=report,
            target_torch_version=target.strip() if target is not None else None,
        )

    def with_overrides(
        self,
        select: list[str] | None = None,
        extend_select: list[str] | None = None,
        ignore: list[str] | None = None,
        exclude: list[str] | None = None,
        min_confidence: str | None = None,
        stress_report: str | None = None,
    ) -> Config:
        """Command-line flags on top (as in ruff): the rule selection is a second level
        applied after the file's (`select` starts again, `extend_select` and `ignore` change
        the file's choice, even what it ignores); `min_confidence` and `stress_report`
        replace, `exclude` extends. Raises ConfigError for a selector that matches no rule."""
        _check_selectors(select or (), "`--select`")
        _check_selectors(extend_select or (), "`--extend-select`")
        _check_selectors(ignore or (), "`--ignore`")
        cli = self.cli
        if select is not None or extend_select or ignore:
            old_select, old_extend, old_ignore = cli or (None, (), ())
            cli = (
                tuple(select) if select is not None else old_select,
                old_extend + tuple(extend_select or ()),
                old_ignore + tuple(ignore or ()),
            )
        return replace(
            self,
            min_confidence=min_confidence or self.min_confidence,
            stress_report=stress_report or self.stress_report,
            cli=cli,
            exclude=self.exclude + tuple(exclude or ()),
        )

    def rules_for(self, path: str | None = None) -> list[tuple[type[Rule], dict[str, Any]]]:
        """The enabled rules (with their options) for a file."""
        return rules_of(self.selection(path))

    def selection(self, path: str | None = None) -> Selection:
        """What decides the rules for a file, without loading them: equal selections give
        equal rules (a key for the results cache)."""
        per_file: tuple[str, ...] = ()
        if path is not None and self.per_file_ignores:
            rel = self._relative(path)
            for glob, codes in self.per_file_ignores:
                if _glob_match(rel, glob):
                    per_file = per_file + codes
        layers: tuple[Layer, ...] = ((self.select, self.extend_select, self.ignore),)
        if self.cli is not None:
            layers = layers + (self.cli,)
        return (layers, per_file, self.options, self.target_torch_version)

    def excludes(self, directory: Path, name: str) -> bool:
        """`is_excluded(directory / name)`, the path built only when a pattern needs it (a
        walk asks for every file and directory)."""
        if name in DEFAULT_EXCLUDE:
            return True
        return bool(self.exclude) and self.is_excluded(directory / name)

    def is_excluded(self, path: Path) -> bool:
        """Whether directory walking should skip `path`."""
        if path.name in DEFAULT_EXCLUDE:
            return True
        if not self.exclude:
            return False
        rel = self._relative(str(path))
        return any(
            _glob_match(rel, glob, below=False) or fnmatch.fnmatch(path.name, glob)
            for glob in self.exclude
        )

    def _relative(self, path: str) -> str:
        if self.root is not None:
            real, root = _real(path), _real(os.fspath(self.root))
            if real == root:
                return "."
            inside = root.rstrip(os.sep) + os.sep
            if real.startswith(inside):
                return real[len(inside) :].replace(os.sep, "/")
        p = Path(path)
        return PurePosixPath(p.as_posix()).as_posix().lstrip("./") or p.name


def _glob_match(rel: str, glob: str, below: bool = True) -> bool:
    """Whether a path relative to the configuration's root matches a pattern: the path, its
    last part for a pattern without `/`, and with `below` any path under a directory the
    pattern names. An exclusion does not take `below`: a walk skips an excluded directory
    when it meets it, and walks a directory given inside one, as ruff does."""
    glob = glob.strip().lstrip("./") if glob.startswith("./") else glob.strip()
    name = rel.rsplit("/", 1)[-1]
    directory = glob.rstrip("/")
    return (
        fnmatch.fnmatch(rel, glob)
        or fnmatch.fnmatch(rel, directory)
        or (below and fnmatch.fnmatch(rel, directory + "/*"))
        or ("/" not in glob and fnmatch.fnmatch(name, glob))
    )


def rules_of(selection: Selection) -> list[tuple[type[Rule], dict[str, Any]]]:
    """The rules (with their options) a selection enables."""
    layers, per_file, options, target = selection
    opts = {code: dict(values) for code, values in options}
    common = {TARGET_TORCH: target} if target is not None else {}
    return [(r, {**common, **opts.get(r.CODE, {})}) for r in _select(layers, per_file)]


def _rule(selector: str) -> type[Rule] | None:
    from numlint.rule import all_rules

    return next((r for r in all_rules() if selector in (r.CODE, r.NAME)), None)


def _matches(selector: str, rule: type[Rule]) -> bool:
    return selector == "ALL" or rule.CODE.startswith(selector) or selector == rule.NAME


def _specificity(selector: str) -> int:
    """How specific a selector is (ruff's order): ALL, then longer code prefixes; a full
    code or a rule name is the most specific."""
    if selector == "ALL":
        return 0
    if not selector.startswith("NUM") or len(selector) >= 6:
        return 99  # a name or a full code
    return len(selector)


def unknown_selectors(selectors: tuple[str, ...] | list[str]) -> list[str]:
    """The selectors that match no rule (NUM000 and ALL are always known)."""
    if not selectors:
        return []
    from numlint.rule import all_rules

    rules = all_rules()
    return [
        s
        for s in selectors
        if s != "ALL" and s != "NUM000" and not any(_matches(s, r) for r in rules)
    ]


def _check_selectors(selectors: Any, where: str) -> None:
    """ConfigError naming the first selector that matches no rule (a typo would otherwise
    turn linting off)."""
    unknown = unknown_selectors(list(selectors))
    if unknown:
        raise ConfigError(
            f"unknown rule selector `{unknown[0]}` in {where} "
            "(a code such as NUM101, a prefix such as NUM1, a rule name, or ALL; "
            "see `numlint rules`)"
        )


def _toml_type(value: Any) -> str:
    names = {str: "a string", bool: "a boolean", int: "an integer", float: "a number"}
    names.update({dict: "a table", list: "a list holding other values than strings"})
    return names.get(type(value), type(value).__name__)


@lru_cache(maxsize=256)
def _select(layers: tuple[Layer, ...], per_file: tuple[str, ...]) -> tuple[type[Rule], ...]:
    """Ruff's selection: start from the rules on by default; each level in turn either
    starts again (it has `select`) or changes the current set (`extend-select` adds,
    `ignore` removes); within a level more specific selectors win, an ignore over a select
    of the same specificity. Per-file ignores remove last."""
    from numlint.rule import all_rules

    rules = all_rules()
    on = {r for r in rules if r.DEFAULT_ENABLED}
    for select, extend, ignore in layers:
        choices = [(_specificity(s), 0, s, True) for s in (*(select or ()), *extend)]
        choices += [(_specificity(s), 1, s, False) for s in ignore]
        updates: dict[type[Rule], bool] = {}
        for _, _, selector, enable in sorted(choices, key=lambda c: (c[0], c[1])):
            for rule in rules:
                if _matches(selector, rule):
                    updates[rule] = enable
        if select is not None:
            on = {r for r, enable in updates.items() if enable}
        else:
            on |= {r for r, enable in updates.items() if enable}
            on -= {r for r, enable in updates.items() if not enable}
    on -= {r for r in rules if any(_matches(s, r) for s in per_file)}
    return tuple(r for r in rules if r in on)


def load(pyproject: Path) -> Config | None:
    """The `[tool.numlint]` table of one pyproject.toml, or None when it has none."""
    tomllib = _tomllib()
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {pyproject}: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{pyproject} is not valid TOML: {exc}") from exc
    table = data.get("tool", {}).get("numlint")
    if table is None:
        return None
    if not isinstance(table, dict):
        raise ConfigError(f"[tool.numlint] in {pyproject} must be a table")
    found = Config.from_table(table, root=pyproject.parent, source=pyproject)
    if found.target_torch_version is None:  # what the project declares beside its settings
        found = replace(found, target_torch_version=declared_torch(pyproject.parent, data))
    return found


@lru_cache(maxsize=1024)
def _candidates(directory: Path) -> tuple[Path, ...]:
    """pyproject.toml files from `directory` upward (existence is cached; contents are not)."""
    candidate = directory / "pyproject.toml"
    try:
        here = (candidate,) if candidate.is_file() else ()
    except OSError:  # a name too long, a permission problem: not a config file
        here = ()
    parent = directory.parent
    return here + (_candidates(parent) if parent != directory else ())


@lru_cache(maxsize=256)
def _load_cached(path: Path, mtime_ns: int, size: int, beside: tuple = ()) -> Config | None:
    """`beside`: the requirement files next to `path` (numlint.requirements.stamp)."""
    return load(path)


@lru_cache(maxsize=256)
def _declared_cached(path: Path, mtime_ns: int, size: int, beside: tuple = ()) -> Config:
    """No [tool.numlint] anywhere: the defaults, with the torch version the nearest
    pyproject.toml (and the requirement files beside it) declares."""
    tomllib = _tomllib()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        data = {}
    return Config(target_torch_version=declared_torch(path.parent, data))


def _discover_dir(directory: Path) -> Config:
    for candidate in _candidates(directory):
        try:
            st = candidate.stat()
        except OSError:
            continue
        found = _load_cached(candidate, st.st_mtime_ns, st.st_size, stamp(candidate.parent))
        if found is not None:
            return found
    nearest = _candidates(directory)[:1]
    try:
        st = nearest[0].stat() if nearest else None
    except OSError:
        st = None
    if st is None:
        return Config()
    return _declared_cached(nearest[0], st.st_mtime_ns, st.st_size, stamp(nearest[0].parent))


def discover(path: str | Path) -> Config:
    """The configuration that applies to `path`: the nearest pyproject.toml with [tool.numlint]."""
    try:
        p = real_path(path)
    except OSError:
        return Config()
    return _discover_dir(p if p.is_dir() else p.parent)


def real_path(path: str | Path) -> Path:
    """`Path(path).resolve()`, resolving each directory once: a tree of files costs one
    `realpath` per directory, not one per file."""
    return Path(_real(os.fspath(path)))


def _real(path: str) -> str:
    head, name = os.path.split(os.path.abspath(path))
    if name in ("", ".", "..") or ".." in path or os.path.islink(path):
        return os.path.realpath(path)  # a link is resolved itself; `..` after a link too
    return os.path.join(_real_dir(head), name)


@lru_cache(maxsize=4096)
def _real_dir(directory: str) -> str:
    return os.path.realpath(directory)


def clear_cache() -> None:
    """Forget which pyproject.toml files exist (after files were created or deleted) and
    where directories lead."""
    _candidates.cache_clear()
    _load_cached.cache_clear()
    _declared_cached.cache_clear()
    _real_dir.cache_clear()
