"""noqa and numlint: ignore comments."""

from __future__ import annotations

import pytest

from numlint import check_source

LINE = "y = torch.log(torch.softmax(x, -1))"


@pytest.mark.parametrize(
    "comment",
    ["# noqa", "# noqa: NUM101", "# noqa:NUM101,NUM102", "# NOQA: NUM102, NUM101",
     "# numlint: ignore[NUM101]", "# numlint: ignore[log-of-softmax]", "# numlint: ignore"],
)  # fmt: skip
def test_line_suppressions(comment):
    assert check_source(f"import torch\n{LINE}  {comment}\n") == []


@pytest.mark.parametrize("comment", ["# noqa: NUM102", "# numlint: ignore[NUM102]", "# nothing"])
def test_other_codes_do_not_suppress(comment):
    assert len(check_source(f"import torch\n{LINE}  {comment}\n")) == 1


def test_noqa_on_other_line_does_not_suppress():
    assert len(check_source(f"import torch  # noqa\n{LINE}\n")) == 1


def test_noqa_on_last_line_of_multiline_finding():
    src = "import torch\ny = torch.log(\n    torch.softmax(x, -1)\n)  # noqa: NUM101\n"
    assert check_source(src) == []


def test_file_level():
    assert check_source(f"# numlint: file-ignore[NUM101]\nimport torch\n{LINE}\n{LINE}\n") == []
    assert check_source(f"# numlint: file-ignore\nimport torch\n{LINE}\n") == []
    assert len(check_source(f"# numlint: file-ignore[NUM102]\nimport torch\n{LINE}\n")) == 1
