"""No crash on any input: generated programs, mutated examples, and hostile files."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import hypothesmith
import pytest
from conftest import HAZARD, run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from numlint import api, check_source
from numlint.api import fix_source
from numlint.config import Config
from numlint.rule import all_rules

ALL = Config.from_table({"select": ["ALL"]})
CLASSES = 4  # generated programs are split over several tests so xdist spreads them
PER_CLASS = int(os.environ.get("NUMLINT_FUZZ_EXAMPLES", "500"))


def _no_crash(source: str) -> None:
    found = check_source(source, "fuzz.py", ALL)
    for d in found:
        assert d.row >= 1 and d.column >= 1 and d.code.startswith("NUM")
        assert "internal error" not in d.message, d.message
    result = fix_source(source, "fuzz.py", ALL, unsafe=True)
    assert result.error is None, result.error  # every fix result parses
    if result.fixed:
        again = fix_source(result.source, "fuzz.py", ALL, unsafe=True)
        assert again.fixed == 0 and again.source == result.source  # fixing twice changes nothing


def _seeded_programs() -> st.SearchStrategy[str]:
    """hypothesmith programs with torch calls spliced in, so rules have something to chew on."""
    snippets = [ex.source for rule in all_rules() for ex in (*rule.INVALID, *rule.VALID)]
    return st.one_of(
        hypothesmith.from_grammar(),
        st.tuples(hypothesmith.from_grammar(), st.sampled_from(snippets)).map(
            lambda t: t[1] + "\n" + t[0]
        ),
    )


@pytest.mark.parametrize("part", range(CLASSES))
def test_generated_programs_never_crash(part):
    @settings(
        max_examples=PER_CLASS,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(source=_seeded_programs(), salt=st.just(part))
    def run(source: str, salt: int) -> None:
        _no_crash(source)

    run()


def _mutations(source: str, rng: random.Random) -> list[str]:
    out = []
    for _ in range(6):
        i = rng.randrange(len(source) + 1)
        j = min(len(source), i + rng.randrange(1, 8))
        choice = rng.randrange(5)
        if choice == 0:
            out.append(source[:i] + source[j:])
        elif choice == 1:
            out.append(
                source[:i]
                + rng.choice(["(", ")", ":", "\n", "\t", "'", "#", "\\", "\x00"])
                + source[i:]
            )
        elif choice == 2:
            lines = source.splitlines(keepends=True)
            k = rng.randrange(len(lines))
            out.append("".join(lines[:k] + [lines[k]] * 2 + lines[k + 1 :]))
        elif choice == 3:
            out.append(source[:i] + source[i:j][::-1] + source[j:])
        else:
            out.append(source.replace("torch", rng.choice(["th", "np", "math", ""]), 1))
    return out


def test_mutated_rule_examples_never_crash():
    rng = random.Random(1234)
    count = 0
    for rule in all_rules():
        for ex in (*rule.INVALID, *rule.VALID):
            for mutated in _mutations(ex.source, rng):
                _no_crash(mutated)
                count += 1
    assert count > 300


@pytest.mark.parametrize(
    "source",
    [
        "import torch\ny = 1 / (1 + torch.exp(()))\n",  # a fix would drop the tuple's parentheses
        "import torch\ny = torch.log(1 + torch.exp(()))\n",
        "import torch\nx, y = map(F.normalize, ((), ()))\nv = x + y\nz = v / v.norm()\n",
    ],
)
def test_empty_tuple_operands_never_crash(source: str) -> None:
    _no_crash(source)


HOSTILE = {
    "crlf.py": HAZARD.replace("\n", "\r\n").encode(),
    "bom.py": b"\xef\xbb\xbf" + HAZARD.encode(),
    "tabs.py": HAZARD.replace("    ", "\t").encode(),
    "unicode.py": "import torch\nπ = torch.softmax(x, -1)\nλ = torch.log(π)\n".encode(),
    "latin1.py": b"# -*- coding: latin-1 -*-\nimport torch\ns = '\xe9'\ny = torch.log(torch.softmax(x, 1))\n",
    "empty.py": b"",
    "nul.py": b"import torch\x00\n",
    "binary.py": bytes(range(256)) * 4,
    "badutf8.py": b"x = '\xff\xfe'\n",
    "deep.py": b"import torch\nx = " + b"(" * 1000 + b"torch.log(x)" + b")" * 1000 + b"\n",
    "deepcalls.py": b"import torch\nx = " + b"f(" * 1000 + b"x" + b")" * 1000 + b"\n",
    "longchain.py": b"import torch\nx = " + b" + ".join([b"torch.log(x)"] * 600) + b"\n",
    "notchain.py": b"import torch\nx = " + b"not " * 10_000 + b"torch.log(x)\n",  # crashes libcst
}


def test_hostile_files(tmp_path: Path):
    for name, data in HOSTILE.items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / "dir.py").mkdir()  # a directory named like a Python file
    (tmp_path / "loop").mkdir()
    os.symlink(tmp_path / "loop", tmp_path / "loop" / "again")  # a symlink loop
    os.symlink(tmp_path / "missing.py", tmp_path / "dangling.py")
    r = run_cli("check", "--output-format", "json", "--no-cache", str(tmp_path))
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr
    found = json.loads(r.stdout)
    by_file: dict[str, set[str]] = {}
    for d in found:
        by_file.setdefault(Path(d["filename"]).name, set()).add(d["code"])
    for name in ("crlf.py", "bom.py", "tabs.py", "unicode.py", "latin1.py"):
        assert "NUM101" in by_file.get(name, set()), (name, by_file.get(name))
    for name in (
        "nul.py",
        "binary.py",
        "badutf8.py",
        "deep.py",
        "deepcalls.py",
        "dangling.py",
        "notchain.py",
    ):
        assert by_file.get(name) == {"NUM000"}, (name, by_file.get(name))
    assert "empty.py" not in by_file and "dir.py" not in by_file
    # a 1,000-deep expression is reported, not crashed on
    assert any(
        "nested" in d["message"] or "parse" in d["message"]
        for d in found
        if d["filename"].endswith("deep.py")
    )


def test_large_files(tmp_path: Path):
    big = tmp_path / "big.py"
    big.write_text(
        "import torch\n" + "y = torch.log(torch.softmax(x, -1))\n" * 2 + "x = 1\n" * 100_000
    )
    wide = tmp_path / "wide.py"
    wide.write_text("x = '" + "a" * 10_000_000 + "'\n")
    r = run_cli("check", "--output-format", "json", "--no-cache", str(big), str(wide))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert [d["code"] for d in json.loads(r.stdout)] == ["NUM101", "NUM101"]


def test_unreadable_file(tmp_path: Path, monkeypatch):
    f = tmp_path / "secret.py"
    f.write_text(HAZARD)
    real = Path.read_bytes

    def deny(self: Path) -> bytes:
        if self.name == "secret.py":
            raise PermissionError(13, "Permission denied")
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", deny)
    (d,) = api.check_paths([tmp_path])
    assert d.code == "NUM000" and "Permission denied" in d.message


def test_interrupted_fix_leaves_original_intact(tmp_path: Path, monkeypatch):
    f = tmp_path / "m.py"
    f.write_text(HAZARD)

    def boom(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        api.write_atomic(f, "changed\n", "utf-8")
    assert f.read_text() == HAZARD
    assert [p.name for p in tmp_path.iterdir()] == ["m.py"]


def test_fix_keeps_encoding_and_bom(tmp_path: Path):
    latin = tmp_path / "latin.py"
    latin.write_bytes(
        b"# -*- coding: latin-1 -*-\nimport torch\ns = '\xe9'\ny = torch.log(torch.softmax(x, 1))\n"
    )
    bom = tmp_path / "bom.py"
    bom.write_bytes(b"\xef\xbb\xbf" + HAZARD.encode())
    r = run_cli("check", "--fix", "--unsafe-fixes", "--no-cache", str(latin), str(bom))
    assert r.returncode == 0, r.stdout + r.stderr
    assert (
        latin.read_bytes()
        == b"# -*- coding: latin-1 -*-\nimport torch\ns = '\xe9'\ny = torch.log_softmax(x, 1)\n"
    )
    assert (
        bom.read_bytes().startswith(b"\xef\xbb\xbfimport torch")
        and b"F.log_softmax" in bom.read_bytes()
    )


def test_a_crashing_rule_is_reported_and_the_others_still_run(monkeypatch):
    from numlint.rules.log_exp.log_of_sigmoid import LogOfSigmoid

    def explode(self, node):
        raise ValueError("boom")

    monkeypatch.setattr(LogOfSigmoid, "visit_Call", explode)
    src = "import torch\ny = torch.log(torch.sigmoid(z))\nw = torch.log(torch.softmax(z, -1))\n"
    found = check_source(src, config={"select": ["NUM101", "NUM102"]})
    assert [d.code for d in found] == ["NUM000", "NUM101"]
    assert "internal error in rule NUM102 (ValueError: boom)" in found[0].message


def test_checked_code_never_runs(tmp_path: Path):
    """Linting, fixing and the language server parse the code; importing it would leave a file."""
    sentinel = tmp_path / "SENTINEL"
    pkg = tmp_path / "victim"
    pkg.mkdir()
    payload = f"import pathlib\npathlib.Path({str(sentinel)!r}).write_text('ran')\n"
    (pkg / "__init__.py").write_text(payload)
    (pkg / "model.py").write_text(payload + "import torch\ny = torch.log(torch.softmax(x, 1))\n")
    (tmp_path / "pyproject.toml").write_text("[tool.numlint]\nselect = ['ALL']\n")
    for args in (
        ["check"],
        ["check", "--fix", "--unsafe-fixes"],
        ["check", "--output-format", "sarif"],
    ):
        run_cli(*args, "--no-cache", str(pkg), cwd=tmp_path)
    from numlint.lsp.server import lint_document

    snap = lint_document((pkg / "model.py").as_uri(), 1, (pkg / "model.py").read_text(), [tmp_path])
    assert snap.diagnostics is not None
    assert not sentinel.exists()


def test_node_validation_is_back_after_parses_that_fail_or_overlap():
    import threading

    import libcst as cst

    from numlint import engine

    validate = cst.CSTNode.__dict__["__post_init__"]
    with pytest.raises(cst.ParserSyntaxError):
        engine.parse("def (:\n")
    assert cst.CSTNode.__dict__["__post_init__"] is validate
    source = "import torch\n" + "y = torch.log(torch.softmax(x, -1))\n" * 2000
    threads = [threading.Thread(target=engine.parse, args=(source,)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert cst.CSTNode.__dict__["__post_init__"] is validate
    with pytest.raises(cst.CSTValidationError):  # nodes built outside a parse are validated
        cst.Name("not a name")


def test_one_huge_statement_is_bounded_and_reported(tmp_path: Path):
    """A 3.3 MB statement of 100,000 calls: seconds and well under 1.5 GB, a NUM000 saying
    what was not analysed, and the findings elsewhere in the file still reported."""
    import resource
    import subprocess
    import sys
    import time

    calls = ", ".join(f"torch.log(values[{i}] + 1e-08)" for i in range(100_000))
    source = (
        "import torch\n\nvalues = torch.rand(100_000)\n"
        f"out = [{calls}]\n\n\ndef f(x):\n    return torch.log(torch.softmax(x, -1))\n"
    )
    big = tmp_path / "big.py"
    big.write_text(source)
    assert len(source) > 3_300_000
    start = time.monotonic()
    r = subprocess.run(
        [sys.executable, "-m", "numlint", "check", "--isolated", "--no-cache",
         "--output-format", "json", str(big)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    elapsed = time.monotonic() - start
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    assert r.returncode == 1, r.stderr
    found = {(d["code"], d["location"]["row"]): d["message"] for d in json.loads(r.stdout)}
    assert set(found) == {("NUM000", 4), ("NUM101", 8)}
    assert found[("NUM000", 4)].startswith("not analysed: the statement on line 4 is ")
    assert elapsed < 30, elapsed
    assert peak_kib < 1.5 * 1024 * 1024, peak_kib
    big.write_text(source.replace(")]\n", ")]  # noqa: NUM000\n", 1))
    assert [d.code for d in check_source(big.read_text(), str(big), Config())] == ["NUM101"]


def test_huge_plain_data_is_left_out_without_a_finding():
    table = ", ".join(str(i) for i in range(30_000))
    source = (
        f"import torch\n\nTABLE = [{table}]\nNAME = '{'a' * 200_000}'\n\n"
        "def f(x):\n    return torch.log(torch.softmax(x, -1))\n"
    )
    found = check_source(source, "data.py", Config())
    assert [(d.code, d.row) for d in found] == [("NUM101", 7)]


def test_code_too_large_for_one_parse_is_linted_in_parts(monkeypatch):
    """Past the parse limit a file is linted in parts of whole top-level statements, with the
    same findings (each part keeps the file's imports) and NUM000 findings that say so; past
    the budget the rest is reported as not analysed."""
    from numlint import engine

    fn = "def f{i}(x):\n    y = 1\n    return torch.log(F.softmax(x, dim=-1))\n\n\n"
    source = "import torch\nimport torch.nn.functional as F\n\n\n" + "".join(
        fn.format(i=i) for i in range(40)
    )
    whole = check_source(source, "parts.py", Config())
    assert len(whole) == 40
    monkeypatch.setattr(engine, "MAX_PARSE_CHARS", 1_000)
    monkeypatch.setattr(engine, "MAX_PART_CHARS", 600)
    split = check_source(source, "parts.py", Config())
    assert [d for d in split if d.code != "NUM000"] == whole
    (note,) = [d for d in split if d.code == "NUM000"]
    assert note.row == 1 and note.message.startswith("analysed in ")
    monkeypatch.setattr(engine, "MAX_PARTS_CHARS", 1_500)
    capped = check_source(source, "parts.py", Config())
    notes = [d for d in capped if d.code == "NUM000"]
    assert [n.message.split(" ")[0] for n in notes] == ["analysed", "not"]
    assert notes[1].message.startswith("not analysed: lines ")
    last = max(d.row for d in capped if d.code == "NUM101")
    assert notes[1].row > last  # every line before the note was linted, none after
    assert len(capped) - 2 == sum(1 for d in whole if d.row < notes[1].row)


def test_huge_compound_statement_header_is_reported():
    """A condition over the limit: the whole `if` is left out, the rest still linted."""
    args = ", ".join(f"torch.log(a[{i}])" for i in range(6000))
    source = (
        f"import torch\n\n\ndef g(a):\n    if max({args}) > 0:\n        return 1\n"
        "    return torch.log(torch.softmax(a, -1))\n"
    )
    found = check_source(source, "h.py", Config())
    assert [(d.code, d.row) for d in found] == [("NUM000", 5), ("NUM101", 7)]
    assert found[0].message.startswith("not analysed: the statement on lines 5-6 ")


def test_a_flag_defined_through_itself_is_analysed() -> None:
    """`sharded = sharded or g.get(...)` in a loop, then a guard on the flag: the guard
    reader follows the flag a bounded number of times instead of failing the file."""
    source = (
        "import torch\n\n"
        "def step(groups, x):\n"
        "    sharded = False\n"
        "    for g in groups:\n"
        "        sharded = sharded or g.get('sharded', False)\n"
        "    if sharded:\n"
        "        return (x * x).sum().sqrt()\n"
        "    return x\n"
    )
    found = check_source(source, "m.py", {"min-confidence": "low"})
    assert "NUM000" not in {d.code for d in found}
    assert [d.code for d in found] == ["NUM201"]


def test_a_rule_crashing_at_the_end_of_a_file_is_reported_at_its_top(monkeypatch):
    """A rule that fails once the whole file was read reports NUM000 at line 1, even where
    only the parts of the file that mention its triggers were parsed."""
    from numlint.rules.training.clip_without_unscale import ClipWithoutUnscale

    def explode(self, t, seq):
        raise ValueError("boom")

    monkeypatch.setattr(ClipWithoutUnscale, "check", explode)
    src = (
        "import torch\n\n\ndef unrelated(x):\n    return x + 1\n\n\n"
        "def train(model, opt, scaler, loss):\n"
        "    scaler.scale(loss).backward()\n"
        "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
        "    scaler.step(opt)\n    scaler.update()\n"
    )
    found = check_source(src, config={"select": ["NUM502"]})
    assert [(d.code, d.row) for d in found] == [("NUM000", 1)]
    assert "internal error in rule NUM502 (ValueError: boom)" in found[0].message


def test_warnings_of_files_read_for_summaries_stay_quiet(tmp_path: Path):
    """A neighbouring file that CPython warns about (`1if x else 2`) prints nothing."""
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "helpers.py").write_text(
        "import torch\ndef probs(x):\n    y = 1if x is None else 2\n    return torch.softmax(x, -1)\n"
    )
    (tmp_path / "train.py").write_text(
        "import torch\nfrom helpers import probs\ndef loss(x):\n    return torch.log(probs(x)).sum()\n"
    )
    r = run_cli("check", "--no-cache", "--isolated", str(tmp_path / "train.py"))
    assert "NUM101" in r.stdout, r.stdout
    assert "Warning" not in r.stderr, r.stderr
