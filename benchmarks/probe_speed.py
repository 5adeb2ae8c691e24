"""What `numlint check --probe` adds on a file with 20 findings, beyond importing torch.

The findings mix expression probes (log of softmax and sigmoid, in several spellings) with a
training-loop finding (clipping scaled gradients: a scripted GradScaler loop) and a
deprecated API (the warning torch emits).

Times, in one process: importing torch, linting the file, then probing its findings (cold:
first probe run, warm: again with a fresh cache). The issue's budget is 3 s for the cold
probe on CPU. Prints the times and the probe/lint ratio.

    python benchmarks/probe_speed.py
"""

from __future__ import annotations

import time

FUNCTIONS = [
    "def f{i}(z, y):\n    p = F.softmax(z * {k}, dim=-1)\n    return -(y * torch.log(p)).sum(-1)\n",
    "def f{i}(x):\n    return torch.log(torch.softmax(x / {k}, dim=-1))\n",
    "def f{i}(logits):\n    return logits.softmax(-1).log() * {k}\n",
    "def f{i}(z):\n    return torch.log(1 - torch.sigmoid(z + {k}))\n",
    "def f{i}(x):\n    return th.log(F.softmax(x, dim=1)) - {k}\n",
    "def f{i}(gate):\n    h = torch.sigmoid(gate * {k})\n    return torch.log(h)\n",
    (
        "def f{i}(model, opt, scaler, batches):\n"
        "    for x in batches:\n"
        "        opt.zero_grad()\n"
        "        scaler.scale(model(x).sum() * {k}).backward()\n"
        "        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
        "        scaler.step(opt)\n"
        "        scaler.update()\n"
    ),
    "def f{i}(x):\n    with torch.cuda.amp.autocast():\n        return x * {k}\n",
]


def source(n: int = 20) -> str:
    head = "import torch\nimport torch as th\nimport torch.nn.functional as F\n\n\n"
    body = "\n\n".join(FUNCTIONS[i % len(FUNCTIONS)].format(i=i, k=i + 1) for i in range(n))
    return head + body


def main() -> None:
    start = time.perf_counter()
    import torch  # noqa: F401

    t_torch = time.perf_counter() - start

    from numlint import check_source
    from numlint.probe import annotate, user

    text = source()
    start = time.perf_counter()
    found = check_source(text, "bench.py", {"select": ["ALL"]})
    t_lint = time.perf_counter() - start
    start = time.perf_counter()
    annotated = annotate(found, {"bench.py": text})
    t_cold = time.perf_counter() - start
    user._CACHE.clear()
    start = time.perf_counter()
    annotate(found, {"bench.py": text})
    t_warm = time.perf_counter() - start
    verdicts: dict[str, int] = {}
    for d in annotated:
        v = d.extra["probe"]["verdict"]
        verdicts[v] = verdicts.get(v, 0) + 1
    print(f"findings: {len(found)}  verdicts: {verdicts}")
    print(f"import torch: {t_torch:.2f} s   lint: {t_lint * 1000:.0f} ms")
    print(f"probe (cold): {t_cold:.2f} s   probe (warm, cache cleared): {t_warm:.2f} s")
    print(
        f"probe/lint ratio (cold): {t_cold / t_lint:.1f}x   budget 3 s: {'ok' if t_cold <= 3 else 'OVER'}"
    )


if __name__ == "__main__":
    main()
