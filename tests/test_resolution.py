"""Name resolution and data flow (numlint.analysis.context) seen through the log-of-softmax rule."""

from __future__ import annotations

import textwrap

import pytest

from numlint import check_source


def codes(src: str) -> list[str]:
    return [
        d.code for d in check_source(textwrap.dedent(src), config={"select": ["NUM101", "NUM102"]})
    ]


@pytest.mark.parametrize(
    "src",
    [
        "import torch as th\ny = th.log(th.softmax(x, 1))",
        "import torch.nn.functional as F\nimport torch\ny = torch.log(F.softmax(x, 1))",
        "from torch.nn import functional as fn\nimport torch\ny = torch.log(fn.softmax(x, 1))",
        "from torch import log, softmax\ny = log(softmax(x, 1))",
        "from torch.nn.functional import softmax as sm\nfrom torch import log as ln\ny = ln(sm(x, 1))",
        "import torch\ny = x.softmax(1).log()",
        "import torch\ny = torch.nn.functional.softmax(x, 1).log()",
        "import torch\ny = torch.special.softmax(x, 1).log()",
        "import torch\ny = torch.Tensor.log(torch.softmax(x, 1))",
        "from torch import nn\nimport torch\ny = torch.log(nn.Softmax(dim=1)(x))",
        "import torch\nsm = torch.nn.Softmax(1)\ny = torch.log(sm(x))",
        "import torch\ny = torch.log(torch.softmax(x, 1).float())",
        "import torch\ny = torch.log(torch.softmax(x, 1)[:, 0])",
        "from torch import *\ny = log(softmax(x, 1))",
        "import torch\ny = torch.softmax(x, 1)\ny.log_()",
    ],
)
def test_spellings_resolve(src):
    assert codes(src) == ["NUM101"], src


@pytest.mark.parametrize(
    "src",
    [
        "import math\ny = math.log(softmax(x))",
        "import numpy as np\ny = np.log(np.softmax(x))",
        "from scipy.special import softmax\nimport numpy as np\ny = np.log(softmax(x))",
        "import jax.numpy as jnp\nimport jax\ny = jnp.log(jax.nn.softmax(x))",
        "import torch\ndef softmax(x): return x\ny = torch.log(my.softmax(x) + 1)",
        "import torch\nself.log(torch.softmax(x, 1))",
        "import torch\nlogger.log(torch.softmax(x, 1))",
        "import torch\ny = torch.log(torch.softmax(x, 1).clamp(min=1e-6))",
    ],
)
def test_near_misses_are_silent(src):
    assert codes(src) == [], src


def test_flow_follows_latest_binding():
    assert (
        codes(
            """
        import torch
        def f(x):
            p = torch.softmax(x, -1)
            p = p.clamp(min=1e-6)
            return torch.log(p)
        """
        )
        == []
    )
    assert (
        codes(
            """
        import torch
        def f(x):
            p = torch.softmax(x, -1)
            p[p < 1e-6] = 1e-6
            return torch.log(p)
        """
        )
        == []
    )
    assert (
        codes(
            """
        import torch
        def f(x):
            p = x.abs() + 1
            q = p
            p = torch.softmax(x, -1)
            return torch.log(q)
        """
        )
        == []
    )
    assert codes(
        """
        import torch
        def f(x):
            p = torch.softmax(x, -1)
            q = p
            return q.log()
        """
    ) == ["NUM101"]


def test_scopes_do_not_leak():
    assert (
        codes(
            """
        import torch
        def f(x):
            p = torch.softmax(x, -1)
        def g(p):
            return torch.log(p)
        """
        )
        == []
    )
    assert (
        codes(
            """
        import torch
        def f(x, probs):
            p = torch.softmax(x, -1)
            return [torch.log(p) for p in probs]
        """
        )
        == []
    )


def test_self_module_in_other_class_is_not_confused():
    assert (
        codes(
            """
        import torch
        from torch import nn
        class A(nn.Module):
            def __init__(self):
                self.act = nn.Softmax(-1)
        class B(nn.Module):
            def __init__(self):
                self.act = nn.Identity()
            def forward(self, x):
                return torch.log(self.act(x))
        """
        )
        == []
    )


def test_tuple_assignment_binds_each_name():
    assert codes(
        """
        import torch
        def f(x, y):
            p, q = torch.softmax(x, -1), y
            return torch.log(p)
        """
    ) == ["NUM101"]
    assert (
        codes(
            """
        import torch
        def f(x, y):
            p, q = torch.softmax(x, -1), y
            p, q = q, p
            return torch.log(p)
        """
        )
        == []
    )


def test_no_grad_context():
    import libcst as cst

    from numlint.analysis.context import Context

    src = textwrap.dedent(
        """
        import torch
        @torch.no_grad()
        def a(): x
        def b():
            with torch.inference_mode():
                x
            with torch.set_grad_enabled(False):
                x
            with torch.enable_grad():
                x
            x
        """
    )
    module = cst.parse_module(src)
    ctx = Context(module)
    seen = []

    class Walk(cst.CSTVisitor):
        def on_visit(self, node):
            ctx.enter(node)
            if isinstance(node, cst.Name) and node.value == "x":
                seen.append(ctx.in_no_grad())
            return True

        def on_leave(self, node):
            ctx.leave(node)

    module.visit(Walk())
    assert seen == [True, True, True, False, False]


@pytest.mark.parametrize(
    ("backend", "expected"),
    [
        # the project's own package binds torch's functions under its names
        ("import torch\nlog = torch.log\nsoftmax = torch.softmax\n", ["NUM101"]),
        ("from torch import log, softmax\n", ["NUM101"]),
        # functions of its own by the same names: not torch's
        ("def log(x):\n    return x\n\ndef softmax(x, d):\n    return x\n", []),
    ],
)
def test_project_reexports_of_torch_resolve(tmp_path, backend: str, expected: list[str]) -> None:
    """`from pkg.core import log, softmax`, where pkg/core re-exports `log = torch.log` from
    a backend module: the names are torch's."""
    user = (
        "import torch\nfrom pkg.core import log, softmax\n\n"
        "def f(x: torch.Tensor):\n    return log(softmax(x, 1))\n"
    )
    reexport = "from pkg.core._backend import log, softmax\n"
    assert _num101_through(tmp_path, "core", "_backend", backend, reexport, user) == expected


@pytest.mark.parametrize(
    ("backend", "expected"),
    [
        # the torch module itself, imported where its absence is tolerated
        ("try:\n    import torch\n    nn = torch.nn\nexcept ImportError:\n"
         "    torch = None\n    nn = None\n", ["NUM101"]),
        ("import torch\nfrom torch import nn\n", ["NUM101"]),
        # a module of the project's own that happens to be called torch: not torch
        ("class torch:\n    pass\nnn = None\n", []),
    ],
)  # fmt: skip
def test_project_reexport_of_the_torch_module(tmp_path, backend: str, expected: list[str]) -> None:
    """`from pkg.torch_utils import torch, nn`, where pkg/torch_utils binds the torch module
    (in a `try` whose `except` binds None): `torch.log` there is torch's."""
    user = (
        "from pkg.torch_utils import torch, nn\n\n\n"
        "class Head(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return torch.log(torch.softmax(x, dim=-1))\n"
    )
    reexport = "from pkg.torch_utils.torch import torch, nn\n"
    assert _num101_through(tmp_path, "torch_utils", "torch", backend, reexport, user) == expected


def _num101_through(
    tmp_path, package: str, module: str, backend: str, reexport: str, user: str
) -> list[str]:
    """NUM101's findings in pkg/use.py (`user`), which imports from pkg/<package>, whose
    `__init__` re-exports (`reexport`) the names pkg/<package>/<module>.py binds (`backend`)."""
    from numlint.api import check_paths

    sub = tmp_path / "pkg" / package
    sub.mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (sub / f"{module}.py").write_text(backend)
    (sub / "__init__.py").write_text(reexport)
    (tmp_path / "pkg" / "use.py").write_text(user)
    found = check_paths([str(tmp_path / "pkg" / "use.py")], config={"select": ["NUM101"]})
    return [d.code for d in found]


@pytest.mark.parametrize(
    ("common", "star", "expected"),
    [
        # the module read by `import *` binds F to torch's functional module
        ("import torch.nn.functional as F\n", "from pkg.common import *", ["NUM101"]),
        # ... through a second `import *`, relative this time
        ("from .base import *\n", "from pkg.common import *", ["NUM101"]),
        # F is the project's own there: not torch's
        ("def softmax(x, dim):\n    return x\n\nclass F:\n    softmax = softmax\n",
         "from pkg.common import *", []),
        # a module that binds no F: unknown, not guessed
        ("import numpy as np\n", "from pkg.common import *", []),
        # a module numlint cannot read: F, nn, np mean what they conventionally do
        ("", "from network import *", ["NUM101"]),
    ],
)  # fmt: skip
def test_names_from_a_star_import(tmp_path, common: str, star: str, expected: list[str]) -> None:
    """`from network import *` gives a research script its `F`, `nn` and `torch`: names are
    read from the module where it is a file of the project, else by convention."""
    from numlint.api import check_paths

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "base.py").write_text("import torch.nn.functional as F\n")
    (pkg / "common.py").write_text(common)
    user = pkg / "use.py"
    user.write_text(
        f"{star}\nimport torch\n\n\ndef f(x):\n    return torch.log(F.softmax(x, dim=-1))\n"
    )
    found = check_paths([str(user)], {"select": ["NUM101"], "no-cache": True})
    assert [d.code for d in found] == expected


@pytest.mark.parametrize(
    ("where", "line", "expected"),
    [
        ("pkg/sub/use.py", "from ..core import log, softmax", ["NUM101"]),
        ("pkg/__init__.py", "from .core import log, softmax", ["NUM101"]),
        ("pkg/sub/__init__.py", "from ..core import log, softmax", ["NUM101"]),
        # above the package's root: nothing to read, no finding and no error
        ("pkg/sub/use.py", "from ...core import log, softmax", []),
    ],
)
def test_relative_imports_resolve(tmp_path, where: str, line: str, expected: list[str]) -> None:
    """`from ..core import log` in a package module reads pkg/core.py, which binds torch's
    functions under those names."""
    from numlint.api import check_paths

    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    for init in ("pkg/__init__.py", "pkg/sub/__init__.py"):
        (tmp_path / init).write_text("")
    (tmp_path / "pkg" / "core.py").write_text(
        "import torch\nlog = torch.log\nsoftmax = torch.softmax\n"
    )
    user = tmp_path / where
    user.write_text(
        f"import torch\n{line}\n\n\ndef f(x: torch.Tensor):\n    return log(softmax(x, 1))\n"
    )
    found = check_paths([str(user)], {"select": ["NUM101"], "no-cache": True})
    assert [d.code for d in found] == expected


def test_an_in_place_log_gets_no_fix():
    """`p.log_()` changes p: an expression written in its place would change nothing."""
    [found] = check_source(
        "import torch\np = torch.softmax(x, 1)\np.log_()\n", config={"select": ["NUM101"]}
    )
    assert found.fix is None
    [plain] = check_source(
        "import torch\np = torch.softmax(x, 1)\nq = p.log()\n", config={"select": ["NUM101"]}
    )
    assert plain.fix is not None
