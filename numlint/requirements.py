"""The lowest torch version a project declares (pyproject.toml, requirements*.txt, setup.cfg).

Read as text only: numlint never imports torch or the project to learn it.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

#: The `[tool.numlint]` setting, and the option key by which rules read it.
TARGET_TORCH = "target-torch-version"
#: A version as `target-torch-version` takes it: "2.1", "2.1.0", "1.13.1".
_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?$")
#: The release segment at the start of a declared version ("2.1.0+cu118", "2.4.0rc1", "2.1.*").
_RELEASE = re.compile(r"\d+(?:\.\d+)*")
#: A PEP 508 requirement: the name, extras, then the rest (specifiers, a URL, markers).
_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(.*)$")
#: One clause of a PEP 440 specifier or a poetry constraint.
_CLAUSE = re.compile(r"(===|~=|==|!=|<=|>=|<|>|\^|~|=)?\s*v?(\d[0-9A-Za-z.*+!-]*)")
#: An operator and the spaces after it (`>= 2.0`).
_SPACED = re.compile(r"(===|~=|==|!=|<=|>=|<|>|\^|~|=)\s+")
#: The operators that bound a version from below.
_LOWER = frozenset({"===", "~=", "==", ">=", ">", "^", "~", "=", ""})


def parse_version(text: str) -> tuple[int, ...] | None:
    """`"2.1"` -> (2, 1); None unless `text` is MAJOR.MINOR or MAJOR.MINOR.PATCH."""
    found = _VERSION.match(text.strip())
    if found is None:
        return None
    return tuple(int(part) for part in found.groups() if part is not None)


def at_least(version: str | None, minimum: tuple[int, ...]) -> bool:
    """Whether torch `version` (None: the newest) has what torch `minimum` introduced."""
    if version is None:
        return True
    parsed = _parsed(version)
    return parsed is None or _padded(parsed) >= _padded(minimum)


@lru_cache(maxsize=64)
def _parsed(version: str) -> tuple[int, ...] | None:
    return parse_version(version)


def _padded(version: tuple[int, ...]) -> tuple[int, ...]:
    return (version + (0, 0, 0))[:3]


def _text(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


def lowest_bound(constraint: str) -> tuple[int, ...] | None:
    """The lowest version a specifier allows (`>=2.0,<3` -> (2, 0); `^2.1` -> (2, 1));
    None for no lower bound (`*`, `<3`, a URL). Poetry's `||` alternatives: the lowest."""
    lowest: tuple[int, ...] | None = None
    for alternative in constraint.split("||"):
        bound: tuple[int, ...] | None = None
        tight = _SPACED.sub(r"\1", alternative.strip().strip("()"))
        for clause in re.split(r"[,\s]+", tight):
            found = _CLAUSE.fullmatch(clause.strip().strip("()"))
            if found is None or (found.group(1) or "") not in _LOWER:
                continue
            release = _RELEASE.match(found.group(2))
            if release is None:
                continue
            version = tuple(int(p) for p in release.group(0).split("."))[:3]
            if bound is None or _padded(version) > _padded(bound):
                bound = version
        if bound is None:
            return None  # one alternative without a lower bound: no minimum
        if lowest is None or _padded(bound) < _padded(lowest):
            lowest = bound
    return lowest


def _requirement_bound(line: str) -> tuple[bool, tuple[int, ...] | None]:
    """(names torch, its lower bound) for one PEP 508 requirement string."""
    found = _REQUIREMENT.match(line)
    if found is None or re.sub(r"[-_.]+", "-", found.group(1)).lower() != "torch":
        return False, None
    rest = found.group(2).split(";", 1)[0].strip()
    if rest.startswith("@"):
        return True, None  # a URL: no version to read
    return True, lowest_bound(rest) if rest else None


def _requirements_txt(text: str) -> list[str]:
    """The requirement lines of a requirements file (comments, options, continuations out)."""
    lines: list[str] = []
    for raw in text.replace("\\\n", " ").splitlines():
        line = re.split(r"(?:^|\s)#", raw, maxsplit=1)[0].strip()
        if line and not line.startswith("-"):
            lines.append(line)
    return lines


def _pyproject_requirements(data: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(PEP 508 strings, poetry constraints on torch) declared in a parsed pyproject.toml."""
    pep508: list[str] = []
    project = data.get("project")
    if isinstance(project, dict):
        deps = project.get("dependencies")
        if isinstance(deps, list):
            pep508 += [d for d in deps if isinstance(d, str)]
        extras = project.get("optional-dependencies")
        if isinstance(extras, dict):
            for group in extras.values():
                if isinstance(group, list):
                    pep508 += [d for d in group if isinstance(d, str)]
    poetry: list[str] = []
    tool = data.get("tool")
    deps = tool.get("poetry", {}).get("dependencies") if isinstance(tool, dict) else None
    if isinstance(deps, dict):
        for name, spec in deps.items():
            if re.sub(r"[-_.]+", "-", str(name)).lower() != "torch":
                continue
            for one in spec if isinstance(spec, list) else [spec]:
                value = one.get("version") if isinstance(one, dict) else one
                poetry.append(value if isinstance(value, str) else "")
    return pep508, poetry


def _setup_cfg(text: str) -> list[str]:
    """`install_requires` and `extras_require` of a setup.cfg."""
    import configparser  # here: most runs read no setup.cfg, and every run starts this module

    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return []
    lines: list[str] = []
    if parser.has_option("options", "install_requires"):
        lines += parser.get("options", "install_requires").splitlines()
    if parser.has_section("options.extras_require"):
        for _, value in parser.items("options.extras_require"):
            lines += value.splitlines()
    return [line.strip() for line in lines if line.strip()]


def _files(directory: Path) -> tuple[Path, ...]:
    """requirements*.txt and setup.cfg in `directory`, in name order."""
    try:
        mtime = directory.stat().st_mtime_ns
    except OSError:
        return ()
    return _listed(directory, mtime)


@lru_cache(maxsize=256)
def _listed(directory: Path, mtime_ns: int) -> tuple[Path, ...]:
    """The listing, read again only when the directory changes (a file added or renamed)."""
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return ()
    return tuple(
        directory / n
        for n in names
        if (n.startswith("requirements") and n.endswith(".txt")) or n == "setup.cfg"
    )


def stamp(directory: Path) -> tuple[tuple[str, int, int], ...]:
    """What the declared version of `directory` depends on besides pyproject.toml (a cache key)."""
    found = []
    for path in _files(directory):
        try:
            st = path.stat()
        except OSError:
            continue
        found.append((path.name, st.st_mtime_ns, st.st_size))
    return tuple(found)


def declared_torch(directory: Path, pyproject: dict[str, Any] | None = None) -> str | None:
    """The lowest torch version the project in `directory` declares (its parsed
    pyproject.toml, requirements*.txt and setup.cfg), such as "2.1"; None when none bounds
    torch from below (no constraint: every torch version)."""
    bounds: list[tuple[int, ...]] = []
    pep508, poetry = _pyproject_requirements(pyproject or {})
    for path in _files(directory):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        pep508 += _setup_cfg(text) if path.name == "setup.cfg" else _requirements_txt(text)
    for line in pep508:
        torch, bound = _requirement_bound(line)
        if torch and bound is not None:
            bounds.append(bound)
    bounds += [b for b in map(lowest_bound, poetry) if b is not None]
    if not bounds:
        return None
    return _text(min(bounds, key=_padded))
