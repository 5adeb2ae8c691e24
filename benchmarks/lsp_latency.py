"""Language-server latency: diagnostics for a 2,000-line file after a change.

Starts `numlint lsp` on stdio, opens a 2,000-line file built from examples/train.py, then
alternates two measurements on the same text: the time from sending `didChange` to receiving
`publishDiagnostics` for that version (debounce included), and the time `numlint check` takes
on that file in-process. Prints the medians and their ratio; the target is 200 ms.

    .venv/bin/python benchmarks/lsp_latency.py [--runs 5] [--lines 2000]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
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
TARGET_MS = 200.0


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

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "numlint", "lsp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
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
    args = parser.parse_args()

    base = build_file(args.lines)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.py"
        path.write_text(base)
        uri = path.as_uri()
        server = Server()
        server.send({"id": 1, "method": "initialize", "params": {"capabilities": {}}})
        server.wait(lambda m: m.get("id") == 1)
        server.send({"method": "initialized", "params": {}})
        item = {"uri": uri, "languageId": "python", "version": 0, "text": base}
        server.send({"method": "textDocument/didOpen", "params": {"textDocument": item}})
        found = len(server.published(uri, 0))  # warm-up: imports, rule discovery
        check_in_process(path)

        latencies, checks = [], []
        for version in range(1, args.runs + 1):
            text = base + f"edited_{version} = {version}\n"
            path.write_text(text)
            change = {
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [{"text": text}],
            }
            start = time.perf_counter()
            server.send({"method": "textDocument/didChange", "params": change})
            assert len(server.published(uri, version)) == found
            latencies.append(time.perf_counter() - start)
            seconds, _ = check_in_process(path)
            checks.append(seconds)
        server.close()

    lsp_ms = statistics.median(latencies) * 1000
    check_ms = statistics.median(checks) * 1000
    debounce_ms = DEBOUNCE_S * 1000
    print(f"file: {args.lines} lines, {found} findings; {args.runs} interleaved runs")
    print(f"numlint lsp, change -> diagnostics: median {lsp_ms:8.1f} ms")
    print(f"  of which the debounce:                    {debounce_ms:8.1f} ms")
    print(f"numlint check, in-process:          median {check_ms:8.1f} ms")
    print(f"ratio lsp / check: {lsp_ms / check_ms:.2f}x")
    print(
        f"server overhead beyond debounce and lint: {lsp_ms - debounce_ms - check_ms:+.1f} ms; "
        f"target {TARGET_MS:.0f} ms after a change: {'met' if lsp_ms <= TARGET_MS else 'NOT met'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
