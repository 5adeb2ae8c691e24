"""The probe's expression evaluator: whitelist, aliases, and that nothing else runs."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from numlint.probe.evaluator import evaluate  # noqa: E402
from numlint.probe.whitelist import NotProbeable, compile_expression  # noqa: E402

IMPORTS = {"torch": "torch", "F": "torch.nn.functional", "th": "torch", "nn": "torch.nn"}


def value(text: str, imports: dict | None = None, **bindings):
    return evaluate(compile_expression(text, IMPORTS if imports is None else imports), bindings)


X = torch.tensor([[0.0, 1.0, 2.0]])


@pytest.mark.parametrize(
    "text",
    [
        "torch.log_softmax(x, -1)",
        "th.log_softmax(x, dim=-1)",
        "F.log_softmax(x, dim=-1)",
        "nn.functional.log_softmax(x, -1)",
        "x.log_softmax(-1)",
        "torch.Tensor.log_softmax(x, -1)",
        "nn.LogSoftmax(dim=-1)(x)",
        "x - torch.logsumexp(x, dim=-1, keepdim=True)",
        "torch.log(torch.softmax(x.double(), -1)).float()",
    ],
)
def test_spellings_agree(text):
    assert torch.allclose(value(text, x=X), torch.log_softmax(X, -1), atol=1e-6)


def test_from_import_aliases():
    imports = {"sm": "torch.nn.functional.softmax", "log": "torch.log"}
    got = value("log(sm(x, -1))", imports, x=X)
    assert torch.allclose(got, torch.log_softmax(X, -1), atol=1e-6)


def test_literals_subscripts_and_info():
    assert value("torch.finfo(x.dtype).tiny", x=X) == torch.finfo(torch.float32).tiny
    assert value('x.masked_fill(x > 1, float("-inf"))[0, 2]', x=X) == -math.inf
    assert value("x[..., 1:].sum()", x=X) == 3.0
    assert value("torch.linalg.eigh(a).eigenvalues", a=torch.eye(2)).tolist() == [1.0, 1.0]
    assert value("torch.tensor([[0.0, 20.0]], dtype=torch.float16)").dtype == torch.float16


@pytest.mark.parametrize(
    "text",
    [
        "os.system('touch /tmp/x')",
        "open('/tmp/x', 'w')",
        "__import__('os').system('true')",
        "x.__class__",
        "x.__class__.__bases__",
        "getattr(x, 'log')()",
        "eval('1')",
        "exec('1')",
        "torch.load('model.pt')",
        "torch.save(x, 'f')",
        "torch.hub.load('a', 'b')",
        "torch.ops.aten.log(x)",
        "torch.__dict__",
        "x.register_hook(print)",
        "x.requires_grad_()",
        "(lambda: 1)()",
        "[y for y in x]",
        "f'{x}'",
        "x if x else x",
        "x and x",
        "model(x)",
        "self.softmax(x)",
        "x.numpy()",
        "torch.log(x, *args)",
        "torch.log(**kw)",
        "subprocess.run(['true'])",
    ],
)
def test_rejected(text):
    imports = {**IMPORTS, "os": "os", "subprocess": "subprocess"}
    with pytest.raises(NotProbeable):
        compile_expression(text, imports)


@pytest.mark.parametrize(
    "text",
    [
        "torch.zeros(10 ** 9)",
        "torch.ones((1 << 20, 1 << 20))",
        "torch.arange(1e12)",
        "torch.randint(0, 2, (10 ** 6, 10 ** 6))",
        "10 ** 10 ** 10",
        "x.expand(10 ** 6, 10 ** 6).sum()",
        "x.reshape(1, 1, 10 ** 9)",
        "F.pad(x, (0, 10 ** 9))",
        "F.one_hot(torch.tensor([1]), num_classes=10 ** 9)",
    ],
)
def test_large_allocations_and_powers_are_refused(text):
    with pytest.raises(NotProbeable):
        value(text, x=torch.ones(1, 1))


def test_in_place_methods_are_probed_out_of_place():
    x = torch.tensor([-1.0, 2.0])
    assert value("x.clamp_(min=0)", x=x).tolist() == [0.0, 2.0]
    assert x.tolist() == [-1.0, 2.0]


def test_free_names_in_order():
    expr = compile_expression("F.cross_entropy(z * t, y) + torch.log(p)", IMPORTS)
    assert expr.free == ("z", "t", "y", "p")


hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

_BENIGN = st.sampled_from(["x", "1", "0.5", "torch.log(x)", "F.softmax(x, -1)", "x.sum()", "y"])
_DANGEROUS = st.sampled_from(["'s'", "os", "open", "__import__", "torch", "F", "self", "eval"])
_ATOMS = st.one_of(_BENIGN, _BENIGN, _BENIGN, _DANGEROUS)
_ATTRS = st.one_of(
    st.sampled_from(["log", "exp", "sum", "softmax", "dtype", "T", "sqrt", "float"]),
    st.sampled_from(["__class__", "system", "_x", "__globals__", "load", "register_hook"]),
)


def _extend(inner):
    return st.one_of(
        st.tuples(inner, _ATTRS).map(lambda t: f"{t[0]}.{t[1]}"),
        st.tuples(inner, _ATTRS).map(lambda t: f"{t[0]}.{t[1]}()"),
        st.tuples(inner, _ATTRS).map(lambda t: f"{t[0]}.{t[1]}()"),
        st.tuples(inner, st.lists(inner, max_size=2)).map(lambda t: f"{t[0]}({', '.join(t[1])})"),
        st.tuples(inner, st.sampled_from(["+", "*", "/", "**", "<", "@"]), inner).map(
            lambda t: f"({t[0]} {t[1]} {t[2]})"
        ),
        st.tuples(inner, inner).map(lambda t: f"{t[0]}[{t[1]}]"),
    )


EXPRESSIONS = st.recursive(_ATOMS, _extend, max_leaves=8)


@hypothesis.settings(max_examples=150, deadline=None, derandomize=True)
@hypothesis.given(EXPRESSIONS)
def test_random_expressions_run_only_whitelisted_torch(text):
    from unittest import mock

    def forbidden(*args, **kwargs):
        raise AssertionError(f"the probe called a forbidden function for {text!r}")

    imports = {**IMPORTS, "os": "os"}
    try:
        expr = compile_expression(text, imports)
    except NotProbeable:
        return
    with (
        mock.patch("builtins.open", forbidden),
        mock.patch("os.system", forbidden),
        mock.patch("builtins.__import__", forbidden),
        mock.patch("builtins.eval", forbidden),
    ):
        try:
            evaluate(expr, {n: torch.ones(2) for n in expr.free})
        except AssertionError:
            raise
        except Exception:
            pass  # torch may reject the arguments: that is not an escape
