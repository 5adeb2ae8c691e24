"""Tables of torch names the analyses share: activations, gradient-free calls, no-grad contexts.

Pure data at the bottom of the analysis package: every other module may import it.
"""

from __future__ import annotations

SOFTMAX_FUNCTIONS = frozenset(
    {
        "torch.softmax",
        "torch.nn.functional.softmax",
        "torch.special.softmax",
        "torch.Tensor.softmax",
    }
)
SOFTMAX_MODULES = frozenset({"torch.nn.Softmax", "torch.nn.modules.activation.Softmax"})
SIGMOID_FUNCTIONS = frozenset(
    {
        "torch.sigmoid",
        "torch.nn.functional.sigmoid",
        "torch.special.expit",
        "torch.Tensor.sigmoid",
    }
)
SIGMOID_MODULES = frozenset({"torch.nn.Sigmoid", "torch.nn.modules.activation.Sigmoid"})
LOG_FUNCTIONS = frozenset({"torch.log", "torch.Tensor.log", "torch.special.log"})

#: Calls and methods that round to whole numbers (`.long()`, `torch.floor(x)`).
ROUNDING = frozenset({"round", "floor", "ceil", "trunc", "long", "int"})
#: Functions and methods whose result carries no gradient back to their tensor argument.
NOT_DIFFERENTIABLE = frozenset(
    {"bucketize", "searchsorted", "argmin", "argmax", "argsort", "nonzero",
     "long", "int", "bool", "round", "floor", "ceil", "sign", "isnan", "isinf", "isfinite",
     "item", "tolist", "numpy", "detach", "numel", "size", "dim", "unique",
     "unique_consecutive"}
)  # fmt: skip

#: Tensor methods that keep zeros zero (a softmax output stays able to reach 0 through them).
TRANSPARENT_METHODS = frozenset(
    {
        "float", "double", "half", "bfloat16", "to", "type", "contiguous", "detach", "clone",
        "squeeze", "unsqueeze", "view", "reshape", "flatten", "permute", "transpose", "t",
        "gather", "index_select", "masked_select", "expand", "expand_as", "cpu", "cuda",
        "type_as", "view_as", "reshape_as",
    }
)  # fmt: skip
TRANSPARENT_FUNCTIONS = frozenset(
    {"torch.gather", "torch.index_select", "torch.squeeze", "torch.unsqueeze", "torch.flatten",
     "torch.clone"}
)  # fmt: skip

#: Modules whose calls and constants give NumPy arrays, Python numbers or other host values,
#: never tensors.
HOST_MODULES = ("numpy.", "math.", "scipy.", "pandas.", "jax.", "tensorflow.", "cupy.")

#: torch names a project may re-export under its own (`kornia.core.sin = torch.sin`): an
#: import of one of these from the project's own package is followed to what it binds.
TORCH_ALIASES = frozenset(
    {"stack", "cat", "concat", "concatenate", "where", "sin", "cos", "tan", "tensor",
     "as_tensor", "zeros", "zeros_like", "ones", "ones_like", "eye", "arange", "linspace",
     "einsum", "normalize", "softmax", "log_softmax", "sigmoid", "pad", "diag", "rand", "randn",
     "sqrt", "rsqrt", "log", "exp", "log1p", "expm1", "pow", "abs", "clamp", "clip", "norm",
     "sum", "mean", "std", "var", "acos", "asin", "atan2", "matmul", "relu", "cross_entropy",
     "nll_loss", "binary_cross_entropy", "Module", "Parameter", "Tensor", "no_grad", "torch",
     "nn", "functional"}
)  # fmt: skip
#: Functions that join tensors along a dimension: 0 wherever a part they join is.
JOINS = frozenset({"torch.cat", "torch.concat", "torch.concatenate", "torch.stack"})
#: Functions whose result counts entries (whole numbers; 0 where there are none).
COUNT_FUNCTIONS = frozenset({"torch.bincount", "torch.histc", "torch.count_nonzero"})
#: Log-probabilities, by the activation whose log they are: their exp is a probability.
LOG_PROBABILITIES = {
    "torch.log_softmax": "softmax",
    "torch.nn.functional.log_softmax": "softmax",
    "torch.special.log_softmax": "softmax",
    "torch.nn.functional.logsigmoid": "sigmoid",
}
#: A tensor of zeros: torch functions and tensor methods whose result is all zeros, and those
#: whose result holds one argument everywhere, by (position, keyword) (0 there: zeros).
ZERO_FUNCTIONS = frozenset({"torch.zeros", "torch.zeros_like"})
ZERO_METHODS = frozenset({"new_zeros"})
FILL_FUNCTIONS = {
    "torch.full": (1, "fill_value"),
    "torch.full_like": (1, "fill_value"),
    "torch.tensor": (0, "data"),
    "torch.as_tensor": (0, "data"),
    "torch.scalar_tensor": (0, "s"),
}
FILL_METHODS = {"new_full": (1, "fill_value"), "new_tensor": (0, "data")}
#: Methods that give a host value (an array, a list, a number) whatever they are called on.
HOST_METHODS = frozenset({"numpy", "tolist", "item", "to_numpy"})

#: Context managers and decorators that turn gradients off (`inference_mode(False)` does not).
NO_GRAD = frozenset(
    {
        "torch.no_grad",
        "torch.inference_mode",
        "torch.autograd.no_grad",
        "torch.autograd.grad_mode.no_grad",
        "torch.autograd.grad_mode.inference_mode",
    }
)

#: torch.distributions made from logits -> the activation their `.probs` is.
PROBS_OF_LOGITS: dict[str, str] = {
    **dict.fromkeys(
        ("torch.distributions.Categorical", "torch.distributions.OneHotCategorical",
         "torch.distributions.categorical.Categorical",
         "torch.distributions.one_hot_categorical.OneHotCategorical",
         "torch.distributions.Multinomial", "torch.distributions.multinomial.Multinomial"),
        "softmax",
    ),
    **dict.fromkeys(
        ("torch.distributions.Bernoulli", "torch.distributions.bernoulli.Bernoulli",
         "torch.distributions.Binomial", "torch.distributions.binomial.Binomial",
         "torch.distributions.Geometric", "torch.distributions.geometric.Geometric"),
        "sigmoid",
    ),
}  # fmt: skip


#: The `reduce=` of a segment reduction (torch_scatter, `scatter_reduce`) that adds up its
#: segment: 0 where every term is.
SUM_REDUCTIONS = frozenset({"sum", "add", "mean"})


#: What a name means by convention, for a file that takes its names from `import *` of a
#: module numlint cannot read (not in the project's files): `from utils import *` where
#: utils is absent. Used only then (numlint.analysis.context.Context._star_name).
CONVENTIONAL_ALIASES = {
    "F": "torch.nn.functional",
    "nn": "torch.nn",
    "th": "torch",
    "np": "numpy",
    "math": "math",
}
