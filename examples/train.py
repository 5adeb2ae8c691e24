"""A small classifier training script with numerical hazards numlint finds.

Run `numlint check examples/` to see them; `numlint check --diff --unsafe-fixes examples/`
shows the fixes.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Classifier(nn.Module):
    def __init__(self, dim: int, classes: int) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(dim, 64), nn.ReLU(), nn.Linear(64, classes))
        self.gate = nn.Linear(dim, 1)
        self.softmax = nn.Softmax(dim=-1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.body(x), self.gate(x).squeeze(-1)

    def log_probs(self, x: torch.Tensor) -> torch.Tensor:
        logits, _ = self(x)
        return torch.log(self.softmax(logits))


def loss_fn(logits: torch.Tensor, gate: torch.Tensor, y: torch.Tensor, keep: torch.Tensor):
    probs = F.softmax(logits, dim=-1)
    nll = -(F.one_hot(y, probs.shape[-1]) * torch.log(probs)).sum(-1)
    h = torch.sigmoid(gate)
    bce = -(keep * torch.log(h) + (1 - keep) * torch.log(1 - h))
    return (nll + bce).mean()


def distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.sqrt(((a - b) ** 2).sum(-1))


def normalise(x: torch.Tensor) -> torch.Tensor:
    return x / x.norm(dim=-1, keepdim=True)


def train(steps: int = 100) -> None:
    torch.manual_seed(0)
    model = Classifier(16, 4)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = torch.cuda.amp.GradScaler()
    for _ in range(steps):
        x = torch.randn(32, 16)
        y = torch.randint(0, 4, (32,))
        keep = torch.rand(32).round()
        optimizer.zero_grad()
        with torch.cuda.amp.autocast():
            logits, gate = model(x)
            loss = loss_fn(logits, gate, y, keep)
        scaler.scale(loss).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()


if __name__ == "__main__":
    train()
