"""The results cache keys files by their status (numlint.cache): an unchanged file is not
read again, and any edit (of the content, the size or the times) is linted again; files
whose findings were read from another file are linted again when that file changes; the
configuration of each directory is found once per run."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections import Counter
from pathlib import Path

import pytest
from conftest import CLEAN, HAZARD

from numlint import api, cli
from numlint import cache as cache_mod
from numlint import config as config_mod

FIXTURE = Path(__file__).parent / "fixtures" / "crossfile"
#: CLEAN with the hazard's length: a same-size edit.
SAME_SIZE_HAZARD = HAZARD
SAME_SIZE_CLEAN = CLEAN.ljust(len(HAZARD) - 1) + "\n"
assert len(SAME_SIZE_CLEAN) == len(SAME_SIZE_HAZARD)


def _run(paths: list[Path]) -> dict[str, list[str]]:
    """The codes found per file name, through the cache."""
    return {
        f.name: [d.code for d in found]
        for f, found in api.lint_paths(paths, {"min-confidence": "low"}, cache=True)
    }


def _stat_keys(cache_dir: Path) -> list[str]:
    (results,) = cache_dir.glob("results-*.json")
    return [k for k in json.loads(results.read_text()) if k.startswith("stat|")]


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "cache"
    monkeypatch.setenv("NUMLINT_CACHE_DIR", str(d))
    return d


@pytest.fixture
def later(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs start a minute after the files were written: no file is "racily" new, so
    every file gets a status key."""
    monkeypatch.setattr(cache_mod, "_now_ns", lambda: time.time_ns() + 60 * 10**9)


@pytest.fixture
def reads(tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the files of tmp_path (not of the cache) that are read."""
    seen: list[str] = []
    read_bytes = Path.read_bytes

    def counted(self: Path) -> bytes:
        if tmp_path in self.parents and cache_dir not in self.parents:
            seen.append(self.name)
        return read_bytes(self)

    monkeypatch.setattr(Path, "read_bytes", counted)
    return seen


def _rewrite(path: Path, text: str, keep_mtime: bool = True) -> None:
    """Write `text` over `path`, its modification time set back as it was; written again
    until its status-change time moves on (a write within one clock tick of the last
    leaves it as it was: the race numlint.cache.RACY_NS covers)."""
    before = path.stat()
    while True:
        path.write_text(text)
        if keep_mtime:
            os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        if path.stat().st_ctime_ns != before.st_ctime_ns:
            return
        time.sleep(0.001)


def test_an_unchanged_file_is_not_read_again(tmp_path, cache_dir, later, reads, monkeypatch):
    (tmp_path / "bad.py").write_text(HAZARD)
    (tmp_path / "good.py").write_text(CLEAN)
    first = _run([tmp_path])
    assert sorted(reads) == ["bad.py", "good.py"]
    assert len(_stat_keys(cache_dir)) == 2
    reads.clear()
    linted: list[object] = []
    monkeypatch.setattr(api, "_check_bytes", lambda job: linted.append(job) or ([], []))
    assert _run([tmp_path]) == first
    assert reads == [] and linted == []


def test_an_edit_of_the_same_size_and_modification_time_is_linted(
    tmp_path, cache_dir, later, reads
):
    bad = tmp_path / "bad.py"
    bad.write_text(SAME_SIZE_CLEAN)
    assert _run([tmp_path]) == {"bad.py": []}
    _rewrite(bad, SAME_SIZE_HAZARD)
    assert bad.stat().st_size == len(SAME_SIZE_CLEAN)
    reads.clear()
    assert _run([tmp_path])["bad.py"] == ["NUM101"]
    assert reads == ["bad.py"]
    _rewrite(bad, SAME_SIZE_CLEAN)
    assert _run([tmp_path]) == {"bad.py": []}


def test_an_edit_changing_the_size_is_linted(tmp_path, cache_dir, later):
    bad = tmp_path / "bad.py"
    bad.write_text(CLEAN)
    assert _run([tmp_path]) == {"bad.py": []}
    _rewrite(bad, HAZARD)
    assert _run([tmp_path])["bad.py"] == ["NUM101"]


def test_a_new_modification_time_rehashes_without_linting(
    tmp_path, cache_dir, later, reads, monkeypatch
):
    bad = tmp_path / "bad.py"
    bad.write_text(HAZARD)
    first = _run([tmp_path])
    old = _stat_keys(cache_dir)
    st = bad.stat()
    os.utime(bad, ns=(st.st_atime_ns, st.st_mtime_ns - 10**9))  # `touch`: same content
    reads.clear()
    linted: list[object] = []
    monkeypatch.setattr(api, "_check_bytes", lambda job: linted.append(job) or ([], []))
    assert _run([tmp_path]) == first
    assert reads == ["bad.py"] and linted == []  # hashed, found by content
    new = _stat_keys(cache_dir)
    assert len(new) == 1 and new != old  # the status key follows the file
    reads.clear()
    assert _run([tmp_path]) == first and reads == []


def test_a_file_written_just_before_the_run_gets_no_status_key(tmp_path, cache_dir, reads):
    """With the real clock: a file changed within RACY_NS of the run is hashed next time,
    so an edit of the same size within the same clock tick is still seen."""
    bad = tmp_path / "bad.py"
    bad.write_text(SAME_SIZE_CLEAN)
    assert _run([tmp_path]) == {"bad.py": []}
    assert _stat_keys(cache_dir) == []
    st = bad.stat()
    bad.write_text(SAME_SIZE_HAZARD)
    os.utime(bad, ns=(st.st_atime_ns, st.st_mtime_ns))
    reads.clear()
    assert _run([tmp_path])["bad.py"] == ["NUM101"]
    assert reads == ["bad.py"]


def test_a_changed_dependency_invalidates_a_status_hit(tmp_path, cache_dir, later):
    """Findings read from another file (here a caller's softmax) follow that file as
    before: the file's own status is unchanged, its findings are not."""
    pkg = tmp_path / "pkg"
    shutil.copytree(FIXTURE, pkg)
    assert "NUM101" in _run([pkg])["losses.py"]
    assert "NUM101" in _run([pkg])["losses.py"]  # from the cache, by status
    train = pkg / "train.py"
    train.write_text(train.read_text().replace("nll_of(torch.softmax(x, -1), t)", "nll_of(x, t)"))
    assert "NUM101" not in _run([pkg])["losses.py"]
    assert "NUM101" not in _run([pkg])["losses.py"]


def test_a_new_rule_selection_does_not_reuse_a_status_key(tmp_path, cache_dir, later):
    (tmp_path / "bad.py").write_text(HAZARD)
    assert _run([tmp_path]) == {"bad.py": ["NUM101"]}
    found = api.lint_paths([tmp_path], {"ignore": ["NUM101"]}, cache=True)
    assert [d for _, ds in found for d in ds] == []


def test_configuration_is_found_once_per_directory(tmp_path, monkeypatch, capsys):
    """The file walk, the linting and the command line's warnings share what each
    directory's configuration is: found once, not once for each."""
    root = tmp_path / "proj"
    (root / "a" / "deep").mkdir(parents=True)
    (root / "b").mkdir()
    (root / "pyproject.toml").write_text("[tool.numlint]\n")
    (root / "b" / "pyproject.toml").write_text('[tool.numlint]\nignore = ["NUM101"]\n')
    for d in (root, root / "a", root / "a" / "deep", root / "b"):
        (d / "bad.py").write_text(HAZARD)
        (d / "good.py").write_text(CLEAN)
    monkeypatch.setenv("NUMLINT_CACHE_DIR", str(tmp_path / "cache"))
    calls: Counter[str] = Counter()
    discover = config_mod.discover

    def counted(path):
        calls[os.fspath(path)] += 1
        return discover(path)

    monkeypatch.setattr(config_mod, "discover", counted)
    for extra in ([], ["--no-cache"]):
        calls.clear()
        code = cli.main(["check", "--output-format", "concise", *extra, str(root)])
        out = capsys.readouterr().out
        assert code == 1
        assert max(calls.values()) == 1, calls
        # a directory without a pyproject.toml has its parent's configuration
        assert set(calls) <= {str(root), str(root / "b")}, calls
        found = sorted(line.split(":")[0] for line in out.splitlines() if "NUM101" in line)
        assert found == sorted(str(d / "bad.py") for d in (root, root / "a", root / "a" / "deep"))
        # the same configurations as discovered file by file
        for f in root.rglob("*.py"):
            assert api.ConfigResolver()(f) == api.resolve_config(None, str(f))
