"""Questions rules ask about values, one module per question.

`evidence`: how sure are we that a value reaches its bad point (confidence of a finding);
`gradients`: can a gradient flow through an expression here; `arrays`: is a value a NumPy
array or a Python number rather than a tensor; `summaries`: what functions, methods and model
classes return, and what their callers pass them, across the files of one run.
"""
