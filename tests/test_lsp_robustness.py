"""`numlint lsp` keeps answering after malformed JSON-RPC, unknown methods, invalid URIs
and huge or pathological documents: raw bytes on the server's stdin, replies read back."""

from __future__ import annotations

import asyncio
import gc
import json
import queue
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

TIMEOUT = 60.0
HAZARD = "import torch\ny = torch.log(torch.softmax(x, dim=-1))\n"


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class RawServer:
    """`numlint lsp` in a subprocess, spoken to in raw JSON-RPC frames."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "numlint", "lsp", "--debounce", "0", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        self.next_id = 100
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    self.inbox.put(None)
                    return
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
                if line in (b"\r\n", b"\n") and length is not None:
                    break
            self.inbox.put(json.loads(out.read(length)))

    def raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.raw(frame(json.dumps({"jsonrpc": "2.0", **message}).encode()))

    def notify(self, method: str, params: Any = None) -> None:
        self.send({"method": method, "params": params})

    def request(self, method: str, params: Any = None) -> dict[str, Any]:
        self.next_id += 1
        self.send({"id": self.next_id, "method": method, "params": params})
        return self.response(self.next_id)

    def response(self, msg_id: int | str) -> dict[str, Any]:
        return self.wait(lambda m: m.get("id") == msg_id and "method" not in m)

    def wait(self, match: Any) -> dict[str, Any]:
        for m in self.seen:
            if match(m):
                self.seen.remove(m)
                return m
        while True:
            m = self.inbox.get(timeout=TIMEOUT)
            assert m is not None, f"the server exited (code {self.proc.poll()})"
            if match(m):
                return m
            self.seen.append(m)

    def diagnostics(self, uri: str) -> list[dict[str, Any]]:
        m = self.wait(
            lambda m: (
                m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri
            )
        )
        return m["params"]["diagnostics"]

    def open(self, uri: str, text: str, version: int = 1) -> None:
        item = {"uri": uri, "languageId": "python", "version": version, "text": text}
        self.notify("textDocument/didOpen", {"textDocument": item})

    def alive(self) -> None:
        """The server still answers a request and still lints a new document."""
        reply = self.request("textDocument/hover", _hover("untitled:nothing"))
        assert reply.get("result") is None and "error" not in reply
        self.next_id += 1
        uri = f"untitled:check{self.next_id}"
        self.open(uri, HAZARD)
        assert [d["code"] for d in self.diagnostics(uri)] == ["NUM101"]

    def close(self) -> int:
        if self.proc.poll() is None:
            self.request("shutdown")
            self.notify("exit")
        try:
            return self.proc.wait(timeout=TIMEOUT)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()


def _hover(uri: str, line: int = 0, character: int = 0) -> dict[str, Any]:
    return {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}


@pytest.fixture(scope="module")
def server() -> Iterator[RawServer]:
    srv = RawServer()
    reply = srv.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
    assert reply["result"]["serverInfo"]["name"] == "numlint"
    srv.notify("initialized", {})
    yield srv
    assert srv.close() == 0


@pytest.mark.parametrize(
    "junk",
    [
        b"this is not a header\r\n\r\n",
        b"Content-Length: many\r\n\r\n",
        frame(b"{not json"),
        frame(b"\xff\xfe\x00 not utf-8"),
        frame(b"[]"),
        frame(b"42"),
        frame(b"null"),
        frame(b'"text"'),
        frame(b'{"jsonrpc": "2.0"}'),
        frame(b'{"jsonrpc": "1.0", "id": 7, "method": "initialize"}'),
        frame(b'{"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": 5}'),
        frame(b'{"jsonrpc": "2.0", "id": null, "result": 1}'),
    ],
)
def test_malformed_jsonrpc_is_survived(server: RawServer, junk: bytes):
    server.raw(junk)
    server.alive()


def test_a_request_with_bad_params_gets_an_error_reply(server: RawServer):
    server.send({"id": "bad", "method": "textDocument/hover", "params": {"nonsense": True}})
    assert server.response("bad")["error"]["code"] == -32602
    server.alive()


def test_unknown_methods(server: RawServer):
    assert server.request("numlint/noSuchMethod", {})["error"]["code"] == -32601
    server.notify("numlint/noSuchNotification", {"x": 1})
    server.notify("$/noSuchThing", None)
    server.alive()


@pytest.mark.parametrize(
    "uri",
    [
        "not a uri",
        "",
        "file:",
        "file://%zz/x.py",
        "file:///tmp/a%00b.py",
        "file:///nonexistent/dir/\u00e9t\u00e9.py",
        "http://example.com/x.py",
        "file:///" + "x" * 5000 + ".py",
    ],
)
def test_invalid_uris(server: RawServer, uri: str):
    server.open(uri, HAZARD)
    server.request("textDocument/hover", _hover(uri, 1, 8))
    action = {
        "textDocument": {"uri": uri},
        "range": {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 9}},
        "context": {"diagnostics": []},
    }
    assert "error" not in server.request("textDocument/codeAction", action)
    server.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    server.alive()


def test_requests_for_documents_never_opened(server: RawServer):
    assert server.request("textDocument/hover", _hover("file:///never/opened.py"))["result"] is None
    server.notify("textDocument/didClose", {"textDocument": {"uri": "file:///never/opened.py"}})
    change = {"textDocument": {"uri": "file:///never/opened.py", "version": 2}}
    server.notify("textDocument/didChange", {**change, "contentChanges": [{"text": "x = 1"}]})
    server.alive()


def test_huge_and_pathological_documents(tmp_path: Path):
    srv = RawServer("--max-chars", "200000")
    srv.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
    srv.notify("initialized", {})
    big = HAZARD + "x = 1\n" * 100_000  # 600,000 characters
    srv.open("untitled:big", big)
    assert srv.diagnostics("untitled:big") == []
    srv.alive()
    deep = "import torch\nx = " + "(" * 5000 + "1" + ")" * 5000 + "\n"
    srv.open("untitled:deep", deep)
    (d,) = srv.diagnostics("untitled:deep")
    assert d["code"] == "NUM000" and "nested" in d["message"]
    chain = HAZARD + "x = " + "not " * 10_000 + "1\n"  # libcst's parser overflows its stack
    srv.open("untitled:chain", chain)
    assert [d["code"] for d in srv.diagnostics("untitled:chain")] == ["NUM000"]
    srv.open("untitled:nul", "import torch\nx = '\x00'\n")
    assert [d["code"] for d in srv.diagnostics("untitled:nul")] in ([], ["NUM000"])
    srv.alive()
    assert srv.close() == 0


def test_the_server_code_path_does_not_import_torch():
    """Linting, fixing and every rule page, as the server does them, without torch."""
    script = textwrap.dedent(
        """
        import sys
        sys.modules["numlint.probe.docs"] = None  # measured evidence is the probe's, not ours
        from numlint import api
        from numlint.lsp import server as lsp
        from numlint.rule import all_rules
        src = "import torch\\ny = torch.log(torch.softmax(x, dim=-1))\\n"
        snap = lsp.lint_document("untitled:x", 1, src)
        assert snap.diagnostics and snap.failure is None, snap
        api.fix_source(src, "x.py", unsafe=True)
        for rule in all_rules():
            assert lsp.rule_markdown(rule.CODE)
        print("torch" in sys.modules)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip() == "False"


def test_collections_are_held_while_linting_and_run_once_idle():
    from numlint.lsp.server import COLLECT_AFTER_S, NumlintServer

    async def scenario() -> None:
        server = NumlintServer()
        with server.collections_held():
            with server.collections_held():  # a hover linting while a change is linted
                assert not gc.isenabled()
            assert not gc.isenabled() and server.collector is None
        assert gc.isenabled() and server.collector is not None
        await asyncio.sleep(COLLECT_AFTER_S * 3)
        assert server.collector is None and server.frozen and gc.get_freeze_count() > 0

    try:
        asyncio.run(scenario())
    finally:
        gc.unfreeze()
        gc.enable()
