"""Hazards that cross functions, methods, model classes and files (numlint.analysis.summaries)."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

from numlint import check_source
from numlint.api import check_paths, lint_paths
from numlint.output import RenderEnv
from numlint.output import sarif as sarif_output

FIXTURE = Path(__file__).parent / "fixtures" / "crossfile"


def _package(tmp_path: Path) -> Path:
    pkg = tmp_path / "pkg"
    shutil.copytree(FIXTURE, pkg)
    return pkg


def _found(paths, **kw) -> list:
    return [d for _, ds in lint_paths(paths, {"min-confidence": "low"}, **kw) for d in ds]


def test_finding_names_where_the_value_is_made(tmp_path: Path) -> None:
    pkg = _package(tmp_path)
    found = [d for d in _found([pkg]) if d.filename.endswith("losses.py")]
    assert [(d.code, d.row) for d in found] == [("NUM101", 7)]
    (related,) = found[0].related
    filename, row, _, note = related
    assert Path(filename).name == "train.py" and "softmax" in note
    assert "torch.softmax" in (pkg / "train.py").read_text().splitlines()[row - 1]
    data = found[0].to_json()
    assert data["related"][0]["location"]["row"] == row
    sarif = json.loads(sarif_output.render(found, RenderEnv()))
    locs = sarif["runs"][0]["results"][0]["relatedLocations"]
    assert locs[0]["physicalLocation"]["region"]["startLine"] == row


def test_caller_change_invalidates_the_cached_helper(tmp_path: Path, monkeypatch) -> None:
    pkg = _package(tmp_path)
    monkeypatch.setenv("NUMLINT_CACHE_DIR", str(tmp_path / "cache"))
    losses = pkg / "losses.py"
    assert any(d.filename == str(losses) for d in _found([pkg], cache=True))
    train = pkg / "train.py"
    train.write_text(train.read_text().replace("nll_of(torch.softmax(x, -1), t)", "nll_of(x, t)"))
    assert not any(d.filename == str(losses) for d in _found([pkg], cache=True))


def test_helper_in_the_same_file() -> None:
    source = textwrap.dedent(
        """
        import torch
        import torch.nn.functional as F

        def probs(z):
            return F.softmax(z, dim=-1)

        def score(z, t):
            p = probs(z)
            return torch.log(p).gather(1, t)

        def safe(z, t):
            p = probs(z).clamp_min(1e-12)
            return torch.log(p).gather(1, t)
        """
    )
    found = check_source(source, "m.py", {"select": ["NUM101"]})
    assert [(d.code, d.row) for d in found] == [("NUM101", 10)]
    assert found[0].related[0][1] == 6


def test_unknown_callers_are_not_assumed_hazardous() -> None:
    source = "import torch\n\ndef nll(p):\n    return -torch.log(p).mean()\n"
    assert check_source(source, "m.py", {"select": ["NUM101", "NUM102", "NUM103"]}) == []


def test_related_location_reaches_the_editor(tmp_path: Path) -> None:
    from numlint.output.lsp import to_lsp

    pkg = _package(tmp_path)
    (finding,) = [d for d in _found([pkg]) if d.filename.endswith("losses.py")]
    data = to_lsp(finding)
    (info,) = data["relatedInformation"]
    assert info["location"]["uri"] == (pkg / "train.py").resolve().as_uri()
    assert info["location"]["range"]["start"]["line"] == finding.related[0][1] - 1
    assert "softmax" in info["message"]


def test_callers_anywhere_in_the_project(tmp_path: Path) -> None:
    """A loss helper in `utils/` called from a script at the project's root."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    utils = tmp_path / "utils"
    utils.mkdir()
    (utils / "__init__.py").write_text("")
    (utils / "losses.py").write_text(
        "import torch\n\n\ndef nll(p, t):\n    return -torch.log(p.gather(1, t)).mean()\n"
    )
    (tmp_path / "train.py").write_text(
        "import torch\nfrom utils.losses import nll\n\n\n"
        "def step(x, t):\n    return nll(torch.softmax(x, -1), t)\n"
    )
    found = _found([utils / "losses.py"])
    assert [(d.code, d.row) for d in found] == [("NUM101", 5)]
    assert Path(found[0].related[0][0]).name == "train.py"


def test_a_caller_read_in_a_search_is_not_parsed_again(tmp_path: Path, monkeypatch) -> None:
    """A file read while searching another file's callers is linted from that read: its
    ast is not parsed a second time, and the finding is the same. Once its text changes,
    it is parsed again."""
    from numlint import engine

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "losses.py").write_text(
        "import torch\n\n\ndef nll(p, t):\n    return -torch.log(p.gather(1, t)).mean()\n"
    )
    train = tmp_path / "train.py"
    train.write_text(
        "import torch\nfrom losses import nll\n\n\n"
        "def step(x, t):\n    return nll(torch.softmax(x, -1), t)\n"
    )
    parsed: list[str] = []
    parse = engine.syntax_tree

    def counted(source: str, path: str):
        parsed.append(Path(path).name)
        return parse(source, path)

    monkeypatch.setattr(engine, "syntax_tree", counted)
    found = _found([tmp_path / "losses.py", train], jobs=1)
    assert [(Path(d.filename).name, d.code) for d in found] == [("losses.py", "NUM101")]
    assert parsed == ["losses.py"]  # train.py's ast is the one the search of callers read
    train.write_text(train.read_text() + "\n\ndef other():\n    return 1\n")
    assert _found([train], jobs=1) == [] and parsed == ["losses.py", "train.py"]


def test_a_function_of_the_same_name_elsewhere_is_not_a_caller(tmp_path: Path) -> None:
    """Callers are matched through imports: another file's `nll(...)` of its own `nll`
    (or of an unrelated one) says nothing about this one."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "losses.py").write_text(
        "import torch\n\n\ndef nll(p, t):\n    return -torch.log(p.gather(1, t)).mean()\n"
    )
    (tmp_path / "other.py").write_text(
        "import torch\n\n\ndef nll(p, t):\n    return p\n\n\n"
        "def step(x, t):\n    return nll(torch.softmax(x, -1), t)\n"
    )
    assert _found([tmp_path / "losses.py"]) == []


def test_many_reassignments_take_linear_steps() -> None:
    """`h = layer(h)` forty times: each name is looked up once per question, not once per
    path through the reassignments (which took minutes on a 1,500-line model file)."""
    import ast

    from numlint.analysis.summaries import Project

    lines = ["import torch", "", "def run(x):", "    h = torch.softmax(x, -1)"]
    lines += [f"    h = h.float() + h.view(-1) * {i}" for i in range(40)]
    lines += ["    return h", "", "def use(x):", "    p = run(x)", "    return p"]
    project = Project("<m>", "\n".join(lines) + "\n")
    expr = ast.parse("p", mode="eval").body
    project.origin(expr, "use", ("softmax",))
    assert 0 < project._steps < 400


def _graded(tmp_path: Path, files: dict[str, str], linted: str, code: str) -> list:
    """Writes a project (a pyproject.toml and `files`), lints `linted` and returns the
    (code, confidence) of its `code` findings."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return [(d.code, d.confidence) for d in _found([tmp_path / linted]) if d.code == code]


def _root_step(tmp_path: Path, module_base: str) -> list:
    """A solver step taking a square root of a clamped difference, in a class based on
    the project's own `Module`, itself based on `module_base`."""
    core = f"import abc\nimport torch\n\n\nclass Module({module_base}):\n    pass\n"
    solver = (
        "import torch\nfrom core import Module\n\n\n"
        "class Dogleg(Module):\n"
        "    def solve(self, a, b, c):\n"
        "        gap = (b * b - c).clamp(min=0)\n"
        "        return (-b + torch.sqrt(gap)) / (2 * a)\n"
    )
    return _graded(tmp_path, {"core.py": core, "solver.py": solver}, "solver.py", "NUM201")


def test_a_project_class_named_module_is_not_an_nn_module(tmp_path: Path) -> None:
    """`class Module(abc.ABC)` of an optimizer library: nothing differentiates its
    methods, so the NaN gradient of sqrt at 0 is only a possibility (low)."""
    assert _root_step(tmp_path, "abc.ABC") == [("NUM201", "low")]


def test_a_project_module_based_on_nn_module_is_differentiated(tmp_path: Path) -> None:
    assert _root_step(tmp_path, "torch.nn.Module") == [("NUM201", "high")]


def _behaviour_step(tmp_path: Path, base: str) -> list:
    """A `forward` step method dividing by a tested sum, in a class based on the project's
    `Behavior`, itself based on `base` (nothing, or torch.nn.Module)."""
    parent = f"({base})" if base else ""
    core = f"import torch\n\n\nclass Behavior{parent}:\n    pass\n"
    rules = (
        "import torch\nfrom core import Behavior\n\n\n"
        "class Normalise(Behavior):\n"
        "    def forward(self, sums, norm):\n"
        "        return torch.where(sums == 0, torch.ones_like(sums), norm / sums)\n"
    )
    return _graded(tmp_path, {"core.py": core, "rules.py": rules}, "rules.py", "NUM110")


def test_a_forward_of_a_plain_project_hierarchy_is_not_differentiated(tmp_path: Path) -> None:
    """A simulation framework's behaviours have a `forward` step but are plain classes:
    the NaN gradient of the discarded branch is only a possibility (low)."""
    assert _behaviour_step(tmp_path, "") == [("NUM110", "low")]


def test_a_forward_of_a_project_hierarchy_on_nn_module_is_differentiated(tmp_path: Path) -> None:
    assert _behaviour_step(tmp_path, "torch.nn.Module") == [("NUM110", "high")]


def _mask_loss(tmp_path: Path, test: str) -> list:
    """A loss helper dividing by the count of a foreground mask it is given, called from
    another file under `test`."""
    losses = (
        "import torch\n\n\n"
        "def mask_loss(fg_mask, per_anchor):\n"
        "    fg = (fg_mask > 0).float()\n"
        "    return (per_anchor * fg).sum() / fg_mask.sum()\n"
    )
    train = (
        "from losses import mask_loss\n\n\n"
        "def step(fg_mask, per_anchor):\n"
        f"    if {test}:\n"
        "        return mask_loss(fg_mask, per_anchor)\n"
        "    return per_anchor.sum() * 0\n"
    )
    return _graded(tmp_path, {"losses.py": losses, "train.py": train}, "losses.py", "NUM202")


def test_a_count_every_caller_tests_for_emptiness_is_low(tmp_path: Path) -> None:
    assert _mask_loss(tmp_path, "fg_mask.sum()") == [("NUM202", "low")]


def test_a_caller_testing_something_else_leaves_the_count_reported(tmp_path: Path) -> None:
    assert _mask_loss(tmp_path, "per_anchor.sum()") == [("NUM202", "high")]


_CHAINED_MODEL = """\
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        x = self.fc(x)
        x = torch.softmax(x, dim=-1)
        return x


class Logits(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        x = torch.softmax(x, dim=-1)
        x = self.fc(x)
        return x
"""


def _trainer(model: str) -> str:
    return (
        "import torch\nfrom model import Net, Logits\n\n"
        f"net = {model}()\n\n\n"
        "def loss_fn(x, y):\n"
        "    p = net(x)\n"
        "    return -(y * torch.log(p)).sum()\n\n\n"
        "if __name__ == '__main__':\n"
        "    loss_fn(torch.randn(2, 4), torch.ones(2, 3)).backward()\n"
    )


def test_a_forward_that_reassigns_one_name_returns_its_last_value(tmp_path: Path) -> None:
    """`x = self.fc(x); x = torch.softmax(x, -1); return x`: the value returned is the
    softmax (the last assignment before the return), not every value `x` ever held."""
    files = {"model.py": _CHAINED_MODEL, "train.py": _trainer("Net")}
    assert _graded(tmp_path, files, "train.py", "NUM101") == [("NUM101", "high")]


def test_a_softmax_overwritten_before_the_return_is_not_returned(tmp_path: Path) -> None:
    files = {"model.py": _CHAINED_MODEL, "train.py": _trainer("Logits")}
    assert _graded(tmp_path, files, "train.py", "NUM101") == []


_NORMS = """\
import torch


def l2_norm(x, dims):
    x = x ** 2
    x = x.sum(dim=dims, keepdim=True)
    x = x.sqrt()
    return x


def safe_norm(x, dims):
    x = x ** 2
    x = x.sum(dim=dims, keepdim=True)
    return x.sqrt().clamp_min(1e-12)


def norm_or_one(x, dims):
    x = (x ** 2).sum(dim=dims, keepdim=True)
    if x.min() == 0:
        x = torch.ones_like(x)
    return x.sqrt()
"""


def _normalised(helper: str) -> str:
    return (
        f"import torch\nfrom norms import {helper}\n\n\n"
        "def features(fx):\n"
        f"    return fx / {helper}(fx, dims=[1])\n\n\n"
        "if __name__ == '__main__':\n"
        "    features(torch.randn(2, 4, requires_grad=True)).sum().backward()\n"
    )


def test_division_by_a_norm_helper_of_another_file(tmp_path: Path) -> None:
    files = {"norms.py": _NORMS, "feats.py": _normalised("l2_norm")}
    assert _graded(tmp_path, files, "feats.py", "NUM202") == [("NUM202", "low")]


def test_division_by_a_guarded_norm_helper_is_not_reported(tmp_path: Path) -> None:
    for helper in ("safe_norm", "norm_or_one"):
        files = {"norms.py": _NORMS, "feats.py": _normalised(helper)}
        assert _graded(tmp_path, files, "feats.py", "NUM202") == [], helper


def test_a_hand_written_bce_of_a_model_in_another_file_is_reported_once(tmp_path: Path) -> None:
    """`p = model(x)` with a model whose forward ends in an `nn.Sigmoid` module, then
    `y * log(p) + (1 - y) * log(1 - p)`: NUM102 names the sigmoid for both logs, and NUM103
    (a probability paired with its complement) stays silent beside it."""
    model = (
        "from torch import nn\n\n\n"
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = nn.Linear(4, 1)\n"
        "        self.act = nn.Sigmoid()\n\n"
        "    def forward(self, x):\n"
        "        x = self.fc(x)\n"
        "        x = self.act(x)\n"
        "        return x\n"
    )
    train = (
        "import torch\nfrom model import Net\n\n\n"
        "def train(model, opt, loader):\n"
        "    for x, y in loader:\n"
        "        p = model(x)\n"
        "        loss = -(y * torch.log(p) + (1 - y) * torch.log(1 - p)).mean()\n"
        "        opt.zero_grad()\n"
        "        loss.backward()\n"
        "        opt.step()\n\n\n"
        "if __name__ == '__main__':\n"
        "    net = Net()\n"
        "    train(net, torch.optim.SGD(net.parameters(), 0.1), [])\n"
    )
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "model.py").write_text(model)
    (tmp_path / "train.py").write_text(train)
    found = [(d.code, d.row) for d in _found([tmp_path / "train.py"])]
    assert found == [("NUM102", 8), ("NUM102", 8)]


_FOCAL = """\
import torch
from torch import nn


def _sigmoid(x):
    return torch.clamp(x.sigmoid_(), min=1e-4, max=1 - 1e-4)


def focal(pred, gt):
    pos = gt.eq(1).float()
    pos_loss = torch.log(pred) * torch.pow(1 - pred, 2) * pos
    neg_loss = torch.log(1 - pred) * torch.pow(pred, 2) * (1 - pos)
    return -(pos_loss.sum() + neg_loss.sum())


class Loss(nn.Module):
    def forward(self, output, batch):
        output["hm"] = {made}
        return focal(output["hm"], batch["hm"])
"""


def test_a_probability_every_caller_clamps_is_not_reported(tmp_path: Path) -> None:
    """A hand-written focal loss on `pred` (NUM103) whose caller clamps `pred` where it is
    made, through a helper and a dict entry: the project bounds it; without the clamp the
    two logs are reported."""
    clamped = {"losses.py": _FOCAL.format(made='_sigmoid(output["hm"])')}
    assert _graded(tmp_path, clamped, "losses.py", "NUM103") == []
    raw = {"losses.py": _FOCAL.format(made='output["hm"].sigmoid() * 0.5')}
    assert _graded(tmp_path, raw, "losses.py", "NUM103") == [("NUM103", "medium")] * 2


_MINER = """
import torch


class Miner({base}):
    def mine(self, emb):
        d = torch.cdist(emb, emb)
        w = torch.log(1.0 - 0.25 * d**2)
        w = torch.nan_to_num(w, neginf=0.0)
        return w
"""


def test_an_override_a_base_class_calls_without_gradients(tmp_path: Path) -> None:
    """A base class in another file calls `self.mine(...)` under `torch.no_grad()`: the
    subclass's override runs without gradients, so a log whose -inf the code replaces
    (NUM103, a gradient hazard only) is not reported; a base that calls it with gradients
    leaves the finding."""
    base = (
        "import torch\n\n\nclass BaseMiner(torch.nn.Module):\n"
        "    def forward(self, emb):\n"
        "        with torch.no_grad():\n"
        "            return self.mine(emb)\n"
    )
    files = {
        "base.py": base,
        "miner.py": "from base import BaseMiner\n" + _MINER.format(base="BaseMiner"),
    }
    assert _graded(tmp_path, files, "miner.py", "NUM103") == []
    files["base.py"] = base.replace(
        "        with torch.no_grad():\n            return", "        return"
    )
    assert _graded(tmp_path, files, "miner.py", "NUM103") != []


ARRAYS_UTILS = """
import numpy as np
import torch


def load_points(path):
    return np.loadtxt(path)


def normalize(pc):
    pc = pc - np.mean(pc, axis=0)
    return pc / np.max(np.sqrt(np.sum(pc ** 2, axis=1)))


def load_tensor(path):
    return torch.from_numpy(np.load(path))


def to_host(t):
    return t.detach().cpu().numpy()
"""

ARRAYS_MAIN = """
import numpy as np
import torch
from pkg.utils import load_points, load_tensor, normalize, to_host


def shares(net, x):
    a = normalize(load_points("a.txt")).mean(0)
    r1 = a / a.sum()
    h = to_host(net(x))
    r2 = h / h.sum()
    t = load_tensor("b.npy")
    r3 = t / t.sum()
    m = np.ones(3) * net(x)
    r4 = m / m.sum()
    return r1, r2, r3, r4


def scale(v):
    return v / v.sum()


def run(net, x):
    scale(np.ones(3))
    return shares(net, x), scale(net(x))


def host_only(v):
    return v / v.sum()


host_only(np.arange(3.0))
"""


def test_array_kind_across_functions_and_files(tmp_path: Path) -> None:
    """NumPy arrays are told from tensors by data flow: through the return values of
    functions in another file and what every caller passes. A tensor, a value mixed with a
    tensor, and a parameter one caller passes a tensor stay findings."""
    (tmp_path / ".git").mkdir()
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "utils.py").write_text(ARRAYS_UTILS)
    main = pkg / "main.py"
    main.write_text(ARRAYS_MAIN)
    found = check_paths([main], {"select": ["NUM202"], "min-confidence": "low"})
    text = ARRAYS_MAIN.splitlines()
    assert sorted(text[d.row - 1].strip() for d in found) == [
        "r3 = t / t.sum()",
        "r4 = m / m.sum()",
        "return v / v.sum()",
    ]


def test_files_that_cannot_call_the_function_are_not_read() -> None:
    """summaries._may_call: a file that only calls its own `f` (no import binding `f`, no
    module named like the callee's) or only `super().f(...)` is left out of the callers; a
    text that is not ASCII is read as Python reads its identifiers."""
    from numlint.analysis.summaries import _may_call

    own = "def f(x):\n    return x\n\n\ndef g(y):\n    return f (y)\n"
    assert not _may_call(own, "f", "pkg.losses", method=False)
    assert _may_call("from pkg.losses import f\nf(1)\n", "f", "pkg.losses", method=False)
    assert _may_call("from pkg import (\n    f,\n)\nf(1)\n", "f", "pkg.losses", method=False)
    assert _may_call("import pkg.losses as L\nL.f(1)\n", "f", "pkg.losses", method=False)
    sub = "class B(A):\n    def forward(self, x):\n        return super().forward(x)\n"
    assert not _may_call(sub, "forward", "pkg.model", method=True)
    assert _may_call(sub + "y = net.forward(x)\n", "forward", "pkg.model", method=True)
    assert _may_call("ｆ = 1\nf(2)\n", "f", "pkg.losses", method=False)  # not ASCII
    # A method is called on an object: a docstring or an old-style super() call is none.
    old_style = "class B(A):\n    def forward(self, x):\n        return super(B, self).forward(x)\n"
    docs = '"""Runs the forward pass — ✓."""\n'
    assert not _may_call(docs + old_style, "forward", "pkg.model", method=True)
    assert _may_call(docs + "y = net . forward (x)\n", "forward", "pkg.model", method=True)
    assert _may_call("y = net.\\\n    forward(x)\n", "forward", "pkg.model", method=True)
    assert _may_call("y = net.ｆorward(x)\n", "forward", "pkg.model", method=True)
