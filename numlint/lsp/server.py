"""The server: pygls 2 on stdio. Diagnostics on open, on change (debounced, published for
the latest version only) and on save; per-diagnostic code actions (the rule's fix, a
`# noqa: CODE` suppression) plus "fix all safe problems in this file"; hover shows the rule's
page. Everything goes through `numlint.api`, with the configuration found from the
document's path. The server never imports torch: it stays on the static path.

Documents are synchronised in full: pygls splits lines with `str.splitlines`, which also
breaks on form feeds and other characters that neither Python nor LSP treat as line breaks,
so incremental edits could land in the wrong place.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import importlib.abc
import json
import logging
import os
import sys
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from lsprotocol import types as lsp
from pygls.exceptions import FeatureRequestError, JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import JsonRPCRequestMessage, LanguageServerProtocol

from numlint import __version__, api
from numlint import config as config_mod
from numlint.config import Config, ConfigError
from numlint.diagnostic import PARSE_ERROR, Diagnostic
from numlint.incremental import Incremental
from numlint.lsp.edits import (
    CONVERTER,
    FIX_ALL_KIND,
    diagnostic_json,
    quick_fixes,
    replace_edit,
    rule_markdown,
    to_diagnostic,
)
from numlint.lsp.options import DEBOUNCE_S, MAX_CHARS
from numlint.lsp.text import TextIndex, uri_to_path

logger = logging.getLogger("numlint.lsp")

#: Idle time after publishing before the garbage collector runs (see NumlintServer.lint).
COLLECT_AFTER_S = 0.1
#: The code action that probes a finding on sample tensors, and the command it runs.
PROBE_KIND = "source.numlint.probe"
PROBE_COMMAND = "numlint.probe"
#: How long a probe may run in its worker process.
PROBE_TIMEOUT_S = 120.0
PYTHON_SUFFIXES = (".py", ".pyi")
#: The method a request whose parameters do not fit is rerouted to, so that pygls answers
#: it with the error through its ordinary path.
_REJECTED = "numlint/rejectedRequest"


@dataclass
class Snapshot:
    """One linted state of a document."""

    uri: str
    version: int | None
    source: str
    path: str
    config: Config
    diagnostics: list[Diagnostic]
    config_error: str | None = None
    failure: str | None = None
    excluded: bool = False
    skipped: str | None = None
    warnings: tuple[str, ...] = field(default=())


def _excluded(path: Path, cfg: Config, roots: Sequence[Path]) -> bool:
    """Whether the configuration excludes `path` or a directory between it and its root."""
    base = cfg.root
    if base is None:
        base = next((r for r in roots if r == path or r in path.parents), None)
    if base is None or (base != path and base not in path.parents):
        base = path.parent
    try:
        for parent in [path, *path.parents]:
            if parent == base:
                return False
            if cfg.is_excluded(parent):
                return True
    except (OSError, ValueError):
        return False
    return False


def lint_document(
    uri: str,
    version: int | None,
    source: str,
    roots: Sequence[Path] = (),
    max_chars: int = MAX_CHARS,
    incremental: Incremental | None = None,
) -> Snapshot:
    """Lint a buffer through `numlint.api` with the configuration found from its path
    (re-linting only what changed since `incremental` last saw it)."""
    real = uri_to_path(uri)
    path = real or (str(roots[0] / "untitled.py") if roots else "<untitled>")
    config_error = None
    try:
        cfg = api.resolve_config(None, path)
    except ConfigError as exc:
        cfg, config_error = Config(), str(exc)
    except (OSError, ValueError) as exc:  # a path the filesystem refuses: the defaults
        logger.warning("no configuration for %s: %s", uri, exc)
        cfg = Config()
    snap = Snapshot(uri, version, source, path, cfg, [], config_error, warnings=cfg.warnings)
    try:
        if real is not None and _excluded(Path(real), cfg, roots):
            snap.excluded = True
            return snap
        if len(source) > max_chars:
            snap.skipped = (
                f"numlint: {uri} not linted in the editor: {len(source):,} characters "
                f"(more than {max_chars:,}); run `numlint check` on it"
            )
            return snap
        snap.diagnostics = api.check_source(source, path, cfg, incremental, verdicts(cfg))
        if cfg.stress_report and (problem := stress_problem(cfg.stress_report)):
            snap.warnings = (*snap.warnings, problem)
    except Exception as exc:  # a bug in a rule must not take the server down
        logger.exception("linting %s failed", uri)
        snap.failure = f"{type(exc).__name__}: {exc}"
    return snap


def verdicts(cfg: Config) -> api.Verdicts | None:
    """What applies the configured stress report's verdicts (they change confidences, so
    numlint.api applies them before its filter); None without a report."""
    if not cfg.stress_report:
        return None
    from numlint.stress.verdict import judged

    return judged


def stress_problem(report_path: str) -> str | None:
    """Why the configured stress report cannot be used (shown once), or None."""
    from numlint.stress.report import StressReportError
    from numlint.stress.verdict import cached_report

    try:
        cached_report(report_path)
    except StressReportError as exc:
        return f"numlint: {exc}"
    return None


class _Protocol(LanguageServerProtocol):
    """Answers a request whose parameters do not fit its method with an error response
    instead of leaving the client waiting for one: the request is rerouted to a handler
    that raises the error, and pygls replies as for any failed request."""

    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            msg_id = data.get("id") if "method" in data else None
            if not isinstance(msg_id, (int, str)) or isinstance(msg_id, bool):
                raise
            error = {"code": exc.code, "message": exc.message or "invalid request"}
            return JsonRPCRequestMessage(id=msg_id, method=_REJECTED, params=error, jsonrpc="2.0")


def _rejected(ls: LanguageServer, params: Any) -> None:
    """The handler of a rerouted request: raise its error."""
    error = params if isinstance(params, dict) else {}
    raise JsonRpcException(code=error.get("code"), message=error.get("message"))


class NumlintServer(LanguageServer):
    """The numlint language server; `create_server()` registers its features."""

    def __init__(self, debounce: float = DEBOUNCE_S, max_chars: int = MAX_CHARS) -> None:
        super().__init__(
            "numlint",
            __version__,
            text_document_sync_kind=lsp.TextDocumentSyncKind.Full,
            protocol_cls=_Protocol,
        )
        self.debounce = debounce
        self.max_chars = max_chars
        self.snapshots: dict[str, Snapshot] = {}
        self.tasks: dict[str, asyncio.Future[None]] = {}
        self.linter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="numlint-lint")
        #: Per document, what the last lint saw (used only in the linter thread).
        self.incremental: dict[str, Incremental] = {}
        self.told: set[str] = set()
        #: Probe results per document: the text they were found in, and the verdict of each
        #: probed finding by (code, row, column).
        self.probes: dict[str, tuple[str, dict[tuple[str, int, int], dict[str, Any]]]] = {}
        self.busy = 0
        self.collector: asyncio.TimerHandle | None = None
        self.frozen = False

    # state

    @property
    def encoding(self) -> str:
        try:
            return str(self.workspace.position_encoding or lsp.PositionEncodingKind.Utf16)
        except RuntimeError:  # not initialised
            return lsp.PositionEncodingKind.Utf16

    def roots(self) -> list[Path]:
        try:
            uris = [f.uri for f in self.workspace.folders.values()] or [self.workspace.root_uri]
        except RuntimeError:
            return []
        paths = [uri_to_path(u) for u in uris if u]
        return [Path(p) for p in paths if p]

    def document(self, uri: str) -> Any | None:
        """The open text document for `uri` (pygls keys documents by the unquoted URI)."""
        try:
            doc = self.workspace.text_documents.get(unquote(uri))
        except RuntimeError:
            return None
        if doc is None:
            return None
        language = (doc.language_id or "").lower()
        if language != "python" and not unquote(uri).endswith(PYTHON_SUFFIXES):
            return None
        return doc

    async def lint(self, uri: str) -> Snapshot | None:
        """Lint the document's current text in the worker thread.

        Collections are held off while linting and publishing (a full one, in a heap holding
        libcst and every rule, costs as much as re-linting a function) and run once idle.
        """
        doc = self.document(uri)
        if doc is None:
            return None
        with self.collections_held():
            return await self._lint(uri, doc)

    @contextlib.contextmanager
    def collections_held(self) -> Iterator[None]:
        self.busy += 1
        gc.disable()
        try:
            yield
        finally:
            self.busy -= 1
            if not self.busy:
                gc.enable()
                if self.collector is not None:
                    self.collector.cancel()
                loop = asyncio.get_running_loop()
                self.collector = loop.call_later(COLLECT_AFTER_S, self.collect)

    def collect(self) -> None:
        """A full collection when idle; the first one also moves what survives it (modules,
        rules, libcst) out of later collections' way."""
        self.collector = None
        if self.busy:
            return
        gc.collect()
        if not self.frozen:
            gc.freeze()
            self.frozen = True

    async def _lint(self, uri: str, doc: Any) -> Snapshot | None:
        version, source = doc.version, doc.source
        loop = asyncio.get_running_loop()
        snap = await loop.run_in_executor(
            self.linter,
            lint_document,
            uri,
            version,
            source,
            self.roots(),
            self.max_chars,
            self.incremental.setdefault(uri, Incremental()),
        )
        doc = self.document(uri)
        if doc is None or doc.version != version or doc.source != source:
            return None  # stale: a newer change is already scheduled
        self.snapshots[uri] = snap
        self.tell(snap)
        return snap

    async def current(self, uri: str) -> Snapshot | None:
        """The snapshot of the document as it is now (linting it if needed)."""
        for _ in range(3):  # the text may change while it is being linted
            doc = self.document(uri)
            if doc is None:
                return None
            snap = self.snapshots.get(uri)
            if snap is not None and snap.version == doc.version and snap.source == doc.source:
                return snap
            snap = await self.lint(uri)
            if snap is not None:
                return snap
        return None

    def schedule(self, uri: str, delay: float, fresh: bool = True) -> None:
        """Lint `uri` after `delay` seconds and publish, replacing a pending run.

        `fresh=False` reuses a snapshot of the same text (one a hover or code action made
        meanwhile); opening, saving and configuration changes always lint again.
        """
        old = self.tasks.pop(uri, None)
        if old is not None:
            old.cancel()
        task = asyncio.ensure_future(self._lint_and_publish(uri, delay, fresh))
        self.tasks[uri] = task
        task.add_done_callback(lambda t: self._finished(uri, t))

    def _finished(self, uri: str, task: asyncio.Future[None]) -> None:
        if self.tasks.get(uri) is task:
            del self.tasks[uri]
        if not task.cancelled() and task.exception() is not None:
            logger.error("linting %s failed: %r", uri, task.exception())

    async def _lint_and_publish(self, uri: str, delay: float, fresh: bool) -> None:
        if delay > 0:
            await asyncio.sleep(delay)
        with self.collections_held():
            snap = await (self.lint(uri) if fresh else self.current(uri))
            if snap is not None:
                self.publish(snap)

    def publish(self, snap: Snapshot) -> None:
        """Send the snapshot's diagnostics, written as JSON directly (lsprotocol's objects
        and converter, for a file of many findings, cost as much as linting an edit)."""
        index = TextIndex(snap.source, self.encoding)
        diagnostics = []
        for d in snap.diagnostics:
            out = diagnostic_json(d, index)
            probed = self.probe_result(snap, d)
            if probed is not None:  # the verdict travels with the diagnostic
                info = {
                    "location": {"uri": snap.uri, "range": out["range"]},
                    "message": _probe_text(probed),
                }
                out["relatedInformation"] = [*out.get("relatedInformation", ()), info]
            diagnostics.append(out)
        params: dict[str, Any] = {"uri": snap.uri, "diagnostics": diagnostics}
        if snap.version is not None:
            params["version"] = snap.version
        send = getattr(self.protocol, "_send_data", None)
        if send is None:  # pragma: no cover (a pygls without it)
            self.text_document_publish_diagnostics(
                CONVERTER.structure(params, lsp.PublishDiagnosticsParams)
            )
            return
        method = lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS
        send({"jsonrpc": "2.0", "method": method, "params": params})

    def probe_result(self, snap: Snapshot, d: Diagnostic) -> dict[str, Any] | None:
        """The verdict of a finding probed in this very text, if it was."""
        kept = self.probes.get(snap.uri)
        if kept is None or kept[0] != snap.source:
            return None
        return kept[1].get((d.code, d.row, d.column))

    async def probe(self, uri: str, code: str, row: int, column: int) -> dict[str, Any]:
        """Probe one finding in a worker process (torch is never imported here; the server
        keeps answering meanwhile), keep the verdict and publish it with the diagnostics."""
        snap = await self.current(uri)
        if snap is None:
            return {"verdict": "not probeable", "evidence": "the document is not open"}
        request = {"source": snap.source, "path": snap.path, "code": code, "row": row,
                   "column": column}  # fmt: skip
        result = await _run_worker(request)
        kept = self.probes.get(uri)
        if kept is None or kept[0] != snap.source:
            kept = self.probes[uri] = (snap.source, {})
        kept[1][(code, row, column)] = result
        self.publish(snap)
        self.window_show_message(
            lsp.ShowMessageParams(lsp.MessageType.Info, f"numlint {code}: {_probe_text(result)}")
        )
        return result

    def forget(self, uri: str) -> None:
        self.incremental.pop(uri, None)
        self.probes.pop(uri, None)
        task = self.tasks.pop(uri, None)
        if task is not None:
            task.cancel()
        self.snapshots.pop(uri, None)
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[])
        )

    def dependents_changed(self, uris: Sequence[str]) -> None:
        """Files were saved or changed on disk: open documents whose findings were read
        from them (a helper, a model class, a caller in another file) are linted again in
        full."""
        changed = {p for p in (uri_to_path(u) for u in uris) if p is not None}
        if not changed:
            return
        from numlint.analysis.summaries import forget_files

        forget_files()
        touched = changed | {os.path.dirname(p) for p in changed}
        for uri, inc in list(self.incremental.items()):
            if uri in uris or not (inc.dependencies & touched):
                continue
            self.incremental[uri] = Incremental()
            self.schedule(uri, 0)

    def config_changed(self) -> None:
        """A pyproject.toml changed: rediscover configuration and relint open documents."""
        config_mod.clear_cache()
        self.told.clear()
        for uri in [d.uri for d in self.workspace.text_documents.values()]:
            self.schedule(uri, 0)

    def tell(self, snap: Snapshot) -> None:
        """Configuration problems and internal failures, each shown once."""
        if snap.config_error and snap.config_error not in self.told:
            self.told.add(snap.config_error)
            self.window_show_message(
                lsp.ShowMessageParams(
                    lsp.MessageType.Error,
                    f"numlint: {snap.config_error}; using the default rules",
                )
            )
        if snap.failure and snap.failure not in self.told:
            self.told.add(snap.failure)
            self.window_show_message(
                lsp.ShowMessageParams(
                    lsp.MessageType.Error, f"numlint failed on {snap.path}: {snap.failure}"
                )
            )
        if snap.skipped:
            self.window_log_message(lsp.LogMessageParams(lsp.MessageType.Info, snap.skipped))
        for w in snap.warnings:
            if w not in self.told:
                self.told.add(w)
                self.window_log_message(lsp.LogMessageParams(lsp.MessageType.Warning, w))

    def report_server_error(self, error: Exception, source: Any) -> None:
        """Log errors (malformed messages, failing handlers) instead of popping them up."""
        if source is FeatureRequestError:
            return
        logger.error("%s: %s", getattr(source, "__name__", source), error)
        try:
            self.window_log_message(
                lsp.LogMessageParams(lsp.MessageType.Error, f"numlint: {error}")
            )
        except Exception:
            pass

    # client capabilities

    def _capability(self, *names: str) -> Any:
        value: Any = self.client_capabilities
        for name in names:
            value = getattr(value, name, None)
            if value is None:
                return None
        return value

    def workspace_edit(
        self, uri: str, version: int | None, edits: list[lsp.TextEdit]
    ) -> lsp.WorkspaceEdit:
        if self._capability("workspace", "workspace_edit", "document_changes"):
            doc = lsp.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
            return lsp.WorkspaceEdit(document_changes=[lsp.TextDocumentEdit(doc, edits)])
        return lsp.WorkspaceEdit(changes={uri: edits})

    # features

    async def hover(self, params: lsp.HoverParams) -> lsp.Hover | None:
        snap = await self.current(params.text_document.uri)
        if snap is None:
            return None
        index = TextIndex(snap.source, self.encoding)
        here = index.point(params.position)
        hits = [
            d for d in snap.diagnostics if (d.row, d.column) <= here <= (d.end_row, d.end_column)
        ]
        if not hits:
            return None
        parts, seen = [], set()
        for d in hits:
            if d.code in seen:
                continue
            seen.add(d.code)
            page = rule_markdown(d.code)
            parts.append(page if page is not None else f"**{d.code}** `{d.name}`: {d.message}")
        for d in hits:
            probed = self.probe_result(snap, d)
            if probed is not None:
                parts.insert(0, f"**{d.code}** {_probe_text(probed)}")
        first = hits[0]
        return lsp.Hover(
            contents=lsp.MarkupContent(lsp.MarkupKind.Markdown, "\n\n---\n\n".join(parts)),
            range=index.range(first.row, first.column, first.end_row, first.end_column),
        )

    async def code_actions(self, params: lsp.CodeActionParams) -> list[lsp.CodeAction] | None:
        uri = params.text_document.uri
        snap = await self.current(uri)
        if snap is None:
            return None
        only = params.context.only

        def wanted(kind: str) -> bool:
            return only is None or any(kind == k or kind.startswith(f"{k}.") for k in only)

        index = TextIndex(snap.source, self.encoding)
        start, end = index.point(params.range.start), index.point(params.range.end)
        actions: list[lsp.CodeAction] = []
        if wanted(lsp.CodeActionKind.QuickFix):
            for d in snap.diagnostics:
                if d.code == PARSE_ERROR or (d.end_row, d.end_column) < start:
                    continue
                if (d.row, d.column) > end:
                    continue
                edit = partial(self.workspace_edit, snap.uri, snap.version)
                actions.extend(quick_fixes(d, index, edit))
        if wanted(PROBE_KIND):
            for d in snap.diagnostics:
                if d.code == PARSE_ERROR or (d.end_row, d.end_column) < start:
                    continue
                if (d.row, d.column) > end:
                    continue
                title = f"numlint: probe {d.code} on sample tensors"
                actions.append(
                    lsp.CodeAction(
                        title=title,
                        kind=PROBE_KIND,
                        diagnostics=[to_diagnostic(d, index)],
                        command=lsp.Command(
                            title, PROBE_COMMAND, arguments=[uri, d.code, d.row, d.column]
                        ),
                    )
                )
        if wanted(FIX_ALL_KIND) and any(
            d.fix is not None and d.fix.applicability == "safe" for d in snap.diagnostics
        ):
            action = lsp.CodeAction(
                title="numlint: fix all safe problems in this file",
                kind=FIX_ALL_KIND,
                data={"uri": uri, "version": snap.version},
            )
            lazy = self._capability("text_document", "code_action", "resolve_support")
            if lazy is None or "edit" not in (lazy.properties or []):
                action = await self.resolve(action)
            actions.append(action)
        return actions

    async def resolve(self, action: lsp.CodeAction) -> lsp.CodeAction:
        """Compute the "fix all" edit (lazily, when the client resolves code actions)."""
        data = action.data if isinstance(action.data, dict) else {}
        uri = data.get("uri")
        snap = await self.current(uri) if isinstance(uri, str) else None
        if action.kind != FIX_ALL_KIND or snap is None:
            return action
        loop = asyncio.get_running_loop()
        fix = partial(
            api.fix_source, snap.source, snap.path, snap.config, verdicts=verdicts(snap.config)
        )
        result = await loop.run_in_executor(self.linter, fix)
        if result.error:
            logger.warning("fix all on %s: %s", uri, result.error)
        edits = []
        if result.source != snap.source:
            edits = [
                replace_edit(snap.source, result.source, TextIndex(snap.source, self.encoding))
            ]
        action.edit = self.workspace_edit(snap.uri, snap.version, edits)
        return action


def create_server(debounce: float = DEBOUNCE_S, max_chars: int = MAX_CHARS) -> NumlintServer:
    """A server with every feature registered."""
    server = NumlintServer(debounce, max_chars)
    server.feature(_REJECTED)(_rejected)

    @server.feature(lsp.INITIALIZED)
    async def initialized(ls: NumlintServer, params: lsp.InitializedParams) -> None:
        if not ls._capability("workspace", "did_change_watched_files", "dynamic_registration"):
            return
        watch = lsp.DidChangeWatchedFilesRegistrationOptions(
            watchers=[lsp.FileSystemWatcher(glob_pattern="**/pyproject.toml")]
        )
        registration = lsp.Registration(
            id="numlint-pyproject",
            method=lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES,
            register_options=watch,
        )
        try:
            await ls.client_register_capability_async(lsp.RegistrationParams([registration]))
        except Exception as exc:
            logger.warning("could not watch pyproject.toml files: %s", exc)

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: NumlintServer, params: lsp.DidOpenTextDocumentParams) -> None:
        config_mod.clear_cache()  # cheap; catches edits when the client cannot watch files
        ls.schedule(params.text_document.uri, 0)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: NumlintServer, params: lsp.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, ls.debounce, fresh=False)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE, lsp.SaveOptions(include_text=False))
    def did_save(ls: NumlintServer, params: lsp.DidSaveTextDocumentParams) -> None:
        if unquote(params.text_document.uri).endswith("/pyproject.toml"):
            ls.config_changed()
        else:
            config_mod.clear_cache()
            ls.schedule(params.text_document.uri, 0)
            ls.dependents_changed([params.text_document.uri])

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: NumlintServer, params: lsp.DidCloseTextDocumentParams) -> None:
        ls.forget(params.text_document.uri)

    @server.feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def watched(ls: NumlintServer, params: lsp.DidChangeWatchedFilesParams) -> None:
        uris = [c.uri for c in params.changes]
        if any(unquote(u).endswith("/pyproject.toml") for u in uris) or not uris:
            ls.config_changed()
        else:
            ls.dependents_changed(uris)

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    async def hover(ls: NumlintServer, params: lsp.HoverParams) -> lsp.Hover | None:
        return await ls.hover(params)

    @server.feature(
        lsp.TEXT_DOCUMENT_CODE_ACTION,
        lsp.CodeActionOptions(
            code_action_kinds=[lsp.CodeActionKind.QuickFix, FIX_ALL_KIND, PROBE_KIND],
            resolve_provider=True,
        ),
    )
    async def code_action(
        ls: NumlintServer, params: lsp.CodeActionParams
    ) -> list[lsp.CodeAction] | None:
        return await ls.code_actions(params)

    @server.feature(lsp.CODE_ACTION_RESOLVE)
    async def code_action_resolve(ls: NumlintServer, params: lsp.CodeAction) -> lsp.CodeAction:
        return await ls.resolve(params)

    @server.command(PROBE_COMMAND)
    async def probe(
        ls: NumlintServer, uri: str, code: str, row: int, column: int
    ) -> dict[str, Any]:
        try:
            return await ls.probe(str(uri), str(code), int(row), int(column))
        except (TypeError, ValueError) as exc:
            return {"verdict": "not probeable", "evidence": f"bad arguments: {exc}"}

    return server


def _probe_text(result: dict[str, Any]) -> str:
    evidence = f" ({result['evidence']})" if result.get("evidence") else ""
    return f"probe: {result.get('verdict', 'not probeable')}{evidence}"


async def _run_worker(request: dict[str, Any]) -> dict[str, Any]:
    """`python -m numlint.probe.worker` on `request`; its JSON answer."""
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "numlint.probe.worker",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        out, _ = await asyncio.wait_for(
            proc.communicate(json.dumps(request).encode()), PROBE_TIMEOUT_S
        )
        return json.loads(out.decode() or "{}") or {"verdict": "not probeable"}
    except asyncio.TimeoutError:
        proc.kill()
        return {
            "verdict": "not probeable",
            "evidence": f"the probe ran over {PROBE_TIMEOUT_S:.0f} s",
        }
    except (OSError, ValueError) as exc:
        return {"verdict": "not probeable", "evidence": f"the probe could not run: {exc}"}


class _NoTorch(importlib.abc.MetaPathFinder):
    """Refuses to import torch: the language server stays on the static path."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        if fullname == "torch" or fullname.startswith("torch."):
            raise ModuleNotFoundError(f"numlint lsp does not import {fullname}", name=fullname)
        return None


def serve(args: argparse.Namespace) -> int:
    """Serve on stdio with the options `numlint.lsp.options.parser` parsed."""
    logging.basicConfig(
        stream=sys.stderr, level=args.log_level, format="numlint-lsp %(levelname)s: %(message)s"
    )
    if not any(isinstance(f, _NoTorch) for f in sys.meta_path):
        sys.meta_path.insert(0, _NoTorch())
    server = create_server(max(args.debounce, 0) / 1000, args.max_chars)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # stray prints must never corrupt the protocol stream
    try:
        server.start_io(stdin, stdout)
    finally:
        server.linter.shutdown(wait=False, cancel_futures=True)
    return 0
