"""Questions rules ask about values, one module per question.

`ops`: which torch operation is this call, what constant is that; `zeros`: can a value be
exactly 0 (or 1), is it positive, is an exponent bounded; `guards`: what keeps a value away
from its bad point (in-place edits, control flow, `torch.where`, later repairs); `evidence`:
how sure are we that a value reaches its bad point (the confidence of a finding);
`gradients`: can a gradient flow through an expression here; `arrays`: is a value a NumPy
array or a Python number rather than a tensor; `dtypes`: float16 evidence and traced dtypes;
`names`: the ast import table; `summaries`: what functions, methods and model classes return,
and what their callers pass them, across the files of one run.
"""
