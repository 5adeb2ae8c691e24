"""Language-server latency: diagnostics for a 2,000-line file after a change.

Starts `numlint lsp` on stdio, opens a 2,000-line file built from examples/train.py, then
times, from sending `didChange` to receiving `publishDiagnostics` for that version (debounce
included), two kinds of edit, each repeated on the same buffer: a line typed inside a function
in the middle of the file, and a statement added at module level (the server re-lints only
what each can change). Beside them, the time `numlint check` takes on the same text
in-process, the peer every editor integration that shells out to a linter pays. Prints
medians and ratios; the target is 150 ms.

With `--baseline DIR` (another numlint checkout, e.g. a `git worktree` of a release), a
second server runs from DIR on its own copy of the file and gets the same edits, the two
servers taking turns edit by edit (a busy machine slows both alike); prints its medians
and the ratio.

    .venv/bin/python benchmarks/lsp_latency.py [--runs 5] [--lines 2000] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import queue
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from numlint import cli
from numlint.lsp import DEBOUNCE_S

ROOT = Path(__file__).resolve().parent.parent
TARGET_MS = 150.0


def build_file(lines: int) -> str:
    """Copies of examples/train.py with renamed definitions, padded to exactly `lines`."""
    template = (ROOT / "examples" / "train.py").read_text().splitlines()
    out: list[str] = []
    copy = 0
    while len(out) + len(template) <= lines:
        out += [re.sub(r"^(\s*(?:def|class) \w+)", rf"\g<1>_{copy}", t) for t in template]
        copy += 1
    out += [f"padding_{i} = {i}" for i in range(lines - len(out))]
    return "\n".join(out) + "\n"


class Server:
    """`numlint lsp` in a subprocess, driven with raw JSON-RPC frames."""

    def __init__(self, checkout: Path | None = None) -> None:
        """`numlint lsp` of this numlint, or of the checkout `checkout`."""
        env = None
        if checkout is not None:
            env = {**os.environ, "PYTHONPATH": str(checkout)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "numlint", "lsp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=checkout,
            env=env,
        )
        self.inbox: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        length = 0
        while line := out.readline():
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
            elif line == b"\r\n":
                self.inbox.put(json.loads(out.read(length)))

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        self.proc.stdin.flush()

    def wait(self, match: Any, timeout: float = 300) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            m = self.inbox.get(timeout=max(deadline - time.monotonic(), 0.001))
            if match(m):
                return m

    def published(self, uri: str, version: int) -> list[Any]:
        m = self.wait(
            lambda m: (
                m.get("method") == "textDocument/publishDiagnostics"
                and m["params"]["uri"] == uri
                and m["params"].get("version") == version
            )
        )
        return m["params"]["diagnostics"]

    def close(self) -> None:
        self.send({"id": 2, "method": "shutdown"})
        self.wait(lambda m: m.get("id") == 2)
        self.send({"method": "exit"})
        self.proc.wait(timeout=30)


def check_in_process(path: Path) -> tuple[float, int]:
    """Seconds `numlint check` takes on `path` in this process, and its exit code."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        start = time.perf_counter()
        code = cli.main(["check", "--no-cache", "--output-format", "concise", str(path)])
        return time.perf_counter() - start, code


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument(
        "--baseline", type=Path, help="another numlint checkout, its server timed in turn"
    )
    args = parser.parse_args()

    base = build_file(args.lines)
    names = ["numlint"] + (["baseline"] if args.baseline else [])
    with tempfile.TemporaryDirectory() as tmp:
        servers: dict[str, Server] = {}
        paths: dict[str, Path] = {}
        found: dict[str, int] = {}  # findings in the file (the two numlints may differ)
        for name in names:
            paths[name] = Path(tmp) / name / "model.py"
            paths[name].parent.mkdir()
            paths[name].write_text(base)
            uri = paths[name].as_uri()
            server = servers[name] = Server(args.baseline.resolve() if name == "baseline" else None)
            server.send({"id": 1, "method": "initialize", "params": {"capabilities": {}}})
            server.wait(lambda m: m.get("id") == 1)
            server.send({"method": "initialized", "params": {}})
            item = {"uri": uri, "languageId": "python", "version": 0, "text": base}
            server.send({"method": "textDocument/didOpen", "params": {"textDocument": item}})
            found[name] = len(server.published(uri, 0))  # warm-up: imports, rule discovery
        # the in-process check reads its own copy: a file changed on disk under a server's
        # open buffer would make that server alone re-read it (its summaries key on mtime)
        checked = Path(tmp) / "check" / "model.py"
        checked.parent.mkdir()
        checked.write_text(base)
        check_in_process(checked)

        lines = base.splitlines(keepends=True)
        mid = next(
            i
            for i in range(len(lines) // 2, len(lines) - 1)
            if lines[i].startswith("    ") and lines[i + 1].startswith("    ")
        )
        indent = lines[mid][: len(lines[mid]) - len(lines[mid].lstrip())]
        times: dict[str, dict[str, list[float]]] = {
            name: {"function": [], "module": [], "check": []} for name in names
        }
        for version in range(1, 2 * args.runs + 1):
            # Typing goes on in one buffer: first lines typed one by one into a function,
            # then statements added one by one at the end of the module.
            if version <= args.runs:
                kind = "function"
                lines.insert(mid + version, f"{indent}edited_{version} = {version}\n")
            else:
                kind = "module"
                lines.append(f"edited_{version} = {version}\n")
            text = "".join(lines)
            for name in names if version % 2 else names[::-1]:  # the servers take turns
                uri = paths[name].as_uri()
                change = {
                    "textDocument": {"uri": uri, "version": version},
                    "contentChanges": [{"text": text}],
                }
                start = time.perf_counter()
                servers[name].send({"method": "textDocument/didChange", "params": change})
                assert len(servers[name].published(uri, version)) == found[name]
                times[name][kind].append(time.perf_counter() - start)
            checked.write_text(text)
            times["numlint"]["check"].append(check_in_process(checked)[0])
        for server in servers.values():
            server.close()

    ms = {k: statistics.median(v) * 1000 for k, v in times["numlint"].items()}
    print(f"file: {args.lines} lines, {found['numlint']} findings; {args.runs} edits of each kind")
    print(f"numlint lsp, edit inside a function -> diagnostics: median {ms['function']:8.1f} ms")
    print(f"numlint lsp, edit at module level   -> diagnostics: median {ms['module']:8.1f} ms")
    print(f"  of which the debounce:                                  {DEBOUNCE_S * 1000:8.1f} ms")
    print(f"numlint check on the file, in-process:              median {ms['check']:8.1f} ms")
    print(
        f"ratio check / lsp: {ms['check'] / ms['function']:.1f}x (function edit), "
        f"{ms['check'] / ms['module']:.2f}x (module edit)"
    )
    if args.baseline:
        peer = {k: statistics.median(v) * 1000 for k, v in times["baseline"].items() if v}
        for kind in ("function", "module"):
            print(
                f"baseline lsp, edit {'inside a function' if kind == 'function' else 'at module level  '}"
                f": median {peer[kind]:8.1f} ms; numlint / baseline {ms[kind] / peer[kind]:.2f}x"
            )
    for kind in ("function", "module"):
        verdict = "met" if ms[kind] <= TARGET_MS else "NOT met"
        print(f"target {TARGET_MS:.0f} ms after an edit ({kind}): {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
