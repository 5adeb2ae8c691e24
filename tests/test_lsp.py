"""`numlint lsp` end to end: a real client (pytest-lsp) drives the server over stdio."""

from __future__ import annotations

import ast
import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pygls.protocol import default_converter
from pytest_lsp import ClientServerConfig, LanguageClient

from numlint import api
from numlint.output.lsp import to_lsp

DEBOUNCE_MS = 300
SERVER = [sys.executable, "-m", "numlint", "lsp", "--debounce", str(DEBOUNCE_MS)]
TIMEOUT = 60.0  # the machine may be busy; nothing here comes close
CONVERTER = default_converter()
pytestmark = pytest.mark.asyncio(loop_scope="module")

HAZARDS = """\
import torch

y = torch.log(torch.softmax(x, dim=-1))
z = torch.log(torch.sigmoid(x))
"""
LOG_SOFTMAX = "import torch\ny = torch.log(torch.softmax(x, dim=-1))\n"


def make_client() -> LanguageClient:
    """A test client that records every publishDiagnostics (with its version)."""
    client = LanguageClient(converter_factory=default_converter)
    client.published: list[lsp.PublishDiagnosticsParams] = []  # type: ignore[misc]

    @client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def publish(ls: LanguageClient, params: lsp.PublishDiagnosticsParams) -> None:
        ls.published.append(params)  # type: ignore[attr-defined]
        ls.diagnostics[params.uri] = params.diagnostics

    @client.feature(lsp.WINDOW_SHOW_MESSAGE)
    def show(ls: LanguageClient, params: lsp.ShowMessageParams) -> None:
        ls.messages.append(params)

    @client.feature(lsp.WINDOW_LOG_MESSAGE)
    def log(ls: LanguageClient, params: lsp.LogMessageParams) -> None:
        ls.log_messages.append(params)

    client.registrations: list[lsp.Registration] = []  # type: ignore[misc]

    @client.feature(lsp.CLIENT_REGISTER_CAPABILITY)
    def register(ls: LanguageClient, params: lsp.RegistrationParams) -> None:
        ls.registrations.extend(params.registrations)  # type: ignore[attr-defined]

    return client


def capabilities(
    encodings: list[str] | None = None, resolve: bool = False
) -> lsp.ClientCapabilities:
    kinds = [lsp.CodeActionKind.QuickFix, lsp.CodeActionKind.SourceFixAll]
    return lsp.ClientCapabilities(
        general=lsp.GeneralClientCapabilities(position_encodings=encodings),
        text_document=lsp.TextDocumentClientCapabilities(
            publish_diagnostics=lsp.PublishDiagnosticsClientCapabilities(version_support=True),
            hover=lsp.HoverClientCapabilities(content_format=[lsp.MarkupKind.Markdown]),
            code_action=lsp.CodeActionClientCapabilities(
                code_action_literal_support=lsp.ClientCodeActionLiteralOptions(
                    lsp.ClientCodeActionKindOptions(value_set=kinds)
                ),
                resolve_support=lsp.ClientCodeActionResolveOptions(["edit"]) if resolve else None,
                data_support=True,
            ),
        ),
        workspace=lsp.WorkspaceClientCapabilities(
            workspace_edit=lsp.WorkspaceEditClientCapabilities(document_changes=True),
            did_change_watched_files=lsp.DidChangeWatchedFilesClientCapabilities(
                dynamic_registration=resolve
            ),
        ),
    )


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ws")
    (root / "pyproject.toml").write_text(
        '[tool.numlint]\nignore = ["NUM102"]\nexclude = ["generated"]\n', encoding="utf-8"
    )
    return root


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=SERVER, client_factory=make_client), scope="module"
)
async def client(lsp_client: LanguageClient, workspace: Path):
    await lsp_client.initialize_session(
        lsp.InitializeParams(capabilities=capabilities(), root_uri=workspace.as_uri())
    )
    yield
    await lsp_client.shutdown_session()


# -- helpers ---------------------------------------------------------------------------


def published(client: LanguageClient) -> list[lsp.PublishDiagnosticsParams]:
    return client.published  # type: ignore[attr-defined]


async def wait_for(
    client: LanguageClient,
    uri: str,
    after: int = 0,
    version: int | None = None,
    where: Callable[[lsp.PublishDiagnosticsParams], bool] | None = None,
) -> lsp.PublishDiagnosticsParams:
    """The first publishDiagnostics for `uri` (and `version`) received after the `after`-th."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TIMEOUT
    while loop.time() < deadline:
        for p in published(client)[after:]:
            if p.uri == uri and version in (None, p.version) and (where is None or where(p)):
                return p
        await asyncio.sleep(0.02)
    raise AssertionError(f"no diagnostics for {uri} (version {version}) in {TIMEOUT} s")


def open_doc(client: LanguageClient, uri: str, text: str, version: int = 1) -> None:
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(uri, "python", version, text))
    )


def change_doc(client: LanguageClient, uri: str, text: str, version: int) -> None:
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(version=version, uri=uri),
            [lsp.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


async def open_and_wait(
    client: LanguageClient, uri: str, text: str, version: int = 1
) -> lsp.PublishDiagnosticsParams:
    mark = len(published(client))
    open_doc(client, uri, text, version)
    return await wait_for(client, uri, mark, version)


def codes(params: lsp.PublishDiagnosticsParams) -> list[str]:
    return [str(d.code) for d in params.diagnostics]


def apply_edits(text: str, edits: list[lsp.TextEdit]) -> str:
    """Apply LSP edits (ASCII text: characters are code points) to `text`."""
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def offset(p: lsp.Position) -> int:
        return starts[p.line] + p.character if p.line < len(starts) else len(text)

    spans = sorted(
        ((offset(e.range.start), offset(e.range.end), e.new_text) for e in edits), reverse=True
    )
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text


def edits_of(action: lsp.CodeAction, uri: str) -> list[lsp.TextEdit]:
    assert action.edit is not None
    if action.edit.document_changes:
        (change,) = action.edit.document_changes
        assert isinstance(change, lsp.TextDocumentEdit)
        assert change.text_document.uri == uri
        return list(change.edits)  # type: ignore[arg-type]
    assert action.edit.changes is not None
    return list(action.edit.changes[uri])


async def actions_at(
    client: LanguageClient,
    uri: str,
    diag: lsp.Diagnostic | None = None,
    only: list[str] | None = None,
) -> list[lsp.CodeAction]:
    rng = diag.range if diag else lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0))
    result = await client.text_document_code_action_async(
        lsp.CodeActionParams(
            text_document=lsp.TextDocumentIdentifier(uri),
            range=rng,
            context=lsp.CodeActionContext(diagnostics=[diag] if diag else [], only=only),
        )
    )
    return [a for a in result or [] if isinstance(a, lsp.CodeAction)]


# -- diagnostics -----------------------------------------------------------------------


async def test_open_publishes_what_check_reports(client: LanguageClient, workspace: Path):
    path = workspace / "train.py"
    params = await open_and_wait(client, path.as_uri(), HAZARDS, version=3)
    assert params.version == 3
    expected = [to_lsp(d) for d in api.check_source(HAZARDS, str(path))]
    assert [CONVERTER.unstructure(d) for d in params.diagnostics] == expected
    (d,) = params.diagnostics  # NUM102 is ignored by the workspace's [tool.numlint]
    assert d.code == "NUM101" and d.source == "numlint"
    assert d.severity == lsp.DiagnosticSeverity.Warning
    assert d.code_description is not None and d.code_description.href.endswith("NUM101.md")
    assert "log_softmax" in d.message
    assert d.range == lsp.Range(lsp.Position(2, 4), lsp.Position(2, 39))


async def test_configuration_is_found_from_the_document(
    client: LanguageClient, workspace: Path, tmp_path: Path
):
    outside = await open_and_wait(client, (tmp_path / "free.py").as_uri(), HAZARDS)
    assert codes(outside) == ["NUM101", "NUM102"]
    excluded = workspace / "generated" / "model.py"
    assert not (await open_and_wait(client, excluded.as_uri(), HAZARDS)).diagnostics
    nested = workspace / "pkg" / "pyproject.toml"
    nested.parent.mkdir()
    nested.write_text('[tool.numlint]\nselect = ["NUM102"]\n', encoding="utf-8")
    inner = await open_and_wait(client, (nested.parent / "m.py").as_uri(), HAZARDS)
    assert codes(inner) == ["NUM102"]


async def test_unsaved_buffers_are_linted_with_the_workspace_configuration(
    client: LanguageClient,
):
    params = await open_and_wait(client, "untitled:Untitled-1", HAZARDS)
    assert codes(params) == ["NUM101"]


async def test_syntax_error_gives_num000_and_recovers(client: LanguageClient, workspace: Path):
    uri = (workspace / "broken.py").as_uri()
    params = await open_and_wait(client, uri, "import torch\ndef f(:\n    pass\n")
    (d,) = params.diagnostics
    assert d.code == "NUM000" and d.severity == lsp.DiagnosticSeverity.Error
    assert d.code_description.href.endswith("rules/NUM000.md") and d.range.start.line == 1
    mark = len(published(client))
    change_doc(client, uri, LOG_SOFTMAX, 2)
    assert codes(await wait_for(client, uri, mark, 2)) == ["NUM101"]


async def test_rapid_changes_publish_once_for_the_latest_version(
    client: LanguageClient, workspace: Path
):
    uri = (workspace / "typing.py").as_uri()
    assert not (await open_and_wait(client, uri, "import torch\n")).diagnostics
    mark = len(published(client))
    for version in range(2, 12):
        text = "import torch\n" + "x = 1\n" * version
        change_doc(client, uri, text + (LOG_SOFTMAX if version == 11 else ""), version)
    latest = await wait_for(client, uri, mark)
    assert latest.version == 11 and codes(latest) == ["NUM101"]
    await asyncio.sleep(3 * DEBOUNCE_MS / 1000)
    assert [p.version for p in published(client)[mark:] if p.uri == uri] == [11]


async def test_save_relints_and_close_clears(client: LanguageClient, workspace: Path):
    uri = (workspace / "saved.py").as_uri()
    await open_and_wait(client, uri, LOG_SOFTMAX)
    mark = len(published(client))
    client.text_document_did_save(lsp.DidSaveTextDocumentParams(lsp.TextDocumentIdentifier(uri)))
    assert codes(await wait_for(client, uri, mark, 1)) == ["NUM101"]
    mark = len(published(client))
    client.text_document_did_close(lsp.DidCloseTextDocumentParams(lsp.TextDocumentIdentifier(uri)))
    assert not (await wait_for(client, uri, mark)).diagnostics


async def test_changed_configuration_is_picked_up(client: LanguageClient, tmp_path: Path):
    config = tmp_path / "pyproject.toml"
    config.write_text("[tool.numlint]\n", encoding="utf-8")
    uri = (tmp_path / "m.py").as_uri()
    assert codes(await open_and_wait(client, uri, HAZARDS)) == ["NUM101", "NUM102"]
    config.write_text('[tool.numlint]\nignore = ["NUM101"]\n', encoding="utf-8")
    mark = len(published(client))
    client.workspace_did_change_watched_files(
        lsp.DidChangeWatchedFilesParams(
            [lsp.FileEvent(config.as_uri(), lsp.FileChangeType.Changed)]
        )
    )
    assert codes(await wait_for(client, uri, mark)) == ["NUM102"]
    config.write_text("[tool.numlint\n", encoding="utf-8")  # broken: defaults, and a message
    mark = len(published(client))
    client.workspace_did_change_watched_files(
        lsp.DidChangeWatchedFilesParams(
            [lsp.FileEvent(config.as_uri(), lsp.FileChangeType.Changed)]
        )
    )
    assert codes(await wait_for(client, uri, mark)) == ["NUM101", "NUM102"]
    assert any("not valid TOML" in m.message for m in client.messages)


async def test_saving_a_file_rereads_its_configuration(client: LanguageClient, tmp_path: Path):
    config = tmp_path / "pyproject.toml"
    config.write_text("[tool.numlint]\n", encoding="utf-8")
    uri = (tmp_path / "m.py").as_uri()
    assert codes(await open_and_wait(client, uri, HAZARDS)) == ["NUM101", "NUM102"]
    config.write_text('[tool.numlint]\nselect = ["NUM102"]\n', encoding="utf-8")
    mark = len(published(client))
    client.text_document_did_save(lsp.DidSaveTextDocumentParams(lsp.TextDocumentIdentifier(uri)))
    assert codes(await wait_for(client, uri, mark)) == ["NUM102"]


# -- code actions ----------------------------------------------------------------------


async def test_quick_fix_and_noqa_actions(client: LanguageClient, workspace: Path):
    path = workspace / "actions.py"
    uri = path.as_uri()
    (diag,) = (await open_and_wait(client, uri, LOG_SOFTMAX)).diagnostics
    actions = await actions_at(client, uri, diag)
    fix = next(a for a in actions if "unsafe fix" in a.title)
    assert fix.kind == lsp.CodeActionKind.QuickFix and "NUM101" in fix.title
    assert not fix.is_preferred
    fixed = apply_edits(LOG_SOFTMAX, edits_of(fix, uri))
    assert fixed == api.fix_source(LOG_SOFTMAX, str(path), unsafe=True).source
    assert "log_softmax" in fixed
    noqa = next(a for a in actions if "noqa" in a.title)
    suppressed = apply_edits(LOG_SOFTMAX, edits_of(noqa, uri))
    assert suppressed.splitlines()[1].endswith(")  # noqa: NUM101")
    assert api.check_source(suppressed, str(path)) == []
    # only unsafe fixes here: nothing for "fix all safe problems"
    assert await actions_at(client, uri, only=[lsp.CodeActionKind.SourceFixAll]) == []


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("  # noqa: E501", "  # noqa: E501, NUM101"),
        ("  # noqa:E501,W291 trailing words", "  # noqa:E501,W291, NUM101 trailing words"),
        ("  # type: ignore", "  # type: ignore  # noqa: NUM101"),
    ],
)
async def test_noqa_extends_an_existing_comment(
    client: LanguageClient, workspace: Path, line: str, expected: str
):
    text = f"import torch\ny = torch.log(torch.softmax(x, dim=-1)){line}\n"
    uri = (workspace / f"noqa_{abs(hash(line))}.py").as_uri()
    (diag,) = (await open_and_wait(client, uri, text)).diagnostics
    (noqa,) = [a for a in await actions_at(client, uri, diag) if "noqa" in a.title]
    new = apply_edits(text, edits_of(noqa, uri))
    assert new.splitlines()[1] == "y = torch.log(torch.softmax(x, dim=-1))" + expected
    assert api.check_source(new, "x.py") == []


async def test_noqa_never_lands_after_a_backslash(client: LanguageClient, workspace: Path):
    text = "import torch\ny = torch.log( \\\n    torch.softmax(x, dim=-1))\n"
    uri = (workspace / "continued.py").as_uri()
    (diag,) = (await open_and_wait(client, uri, text)).diagnostics
    (noqa,) = [a for a in await actions_at(client, uri, diag) if "noqa" in a.title]
    new = apply_edits(text, edits_of(noqa, uri))
    assert new.splitlines()[2].endswith("  # noqa: NUM101")
    compile(new, "continued.py", "exec")
    assert api.check_source(new, "x.py") == []


def _safe_fix_example() -> tuple[str, str] | None:
    """(code, source) of a rule example whose fix is safe, if any rule has one."""
    from numlint.rule import all_rules

    for rule in all_rules():
        for ex in rule.INVALID:
            found = api.check_source(ex.source, "<example>", {"select": [rule.CODE]})
            if any(d.fix is not None and d.fix.applicability == "safe" for d in found):
                return rule.CODE, ex.source
    return None


async def test_fix_all_safe_problems(client: LanguageClient, workspace: Path):
    example = _safe_fix_example()
    if example is None:
        pytest.skip("no rule has a safe fix yet")
    code, source = example
    folder = workspace / "fixall"
    folder.mkdir()
    (folder / "pyproject.toml").write_text(f'[tool.numlint]\nselect = ["{code}"]\n')
    uri = (folder / "m.py").as_uri()
    await open_and_wait(client, uri, source)
    (action,) = await actions_at(client, uri, only=[lsp.CodeActionKind.SourceFixAll])
    assert action.kind == "source.fixAll.numlint" and "fix all safe" in action.title
    fixed = apply_edits(source, edits_of(action, uri))
    assert fixed == api.fix_source(source, str(folder / "m.py")).source != source


# -- hover -----------------------------------------------------------------------------


async def test_hover_shows_the_rule_page(client: LanguageClient, workspace: Path):
    uri = (workspace / "hover.py").as_uri()
    await open_and_wait(client, uri, LOG_SOFTMAX)
    hover = await client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(uri), lsp.Position(1, 10))
    )
    assert hover is not None and isinstance(hover.contents, lsp.MarkupContent)
    assert hover.contents.kind == lsp.MarkupKind.Markdown
    assert hover.contents.value.startswith("# NUM101 `log-of-softmax`")  # no HTML comment
    assert "## Why is this bad?\nA softmax" in hover.contents.value  # not a code block
    assert hover.range == lsp.Range(lsp.Position(1, 4), lsp.Position(1, 39))
    nothing = await client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(uri), lsp.Position(0, 3))
    )
    assert nothing is None


async def test_requests_see_the_latest_text_before_the_debounce(
    client: LanguageClient, workspace: Path
):
    uri = (workspace / "fresh.py").as_uri()
    await open_and_wait(client, uri, "import torch\n")
    change_doc(client, uri, "import torch\n\n\n" + LOG_SOFTMAX.split("\n", 1)[1], 2)
    hover = await client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(uri), lsp.Position(3, 10))
    )
    assert hover is not None and hover.range is not None and hover.range.start.line == 3


# -- position encodings ----------------------------------------------------------------

EMOJI = 'import torch\ns = "😀😀"; y = torch.log(torch.softmax(x, dim=-1))\n'
COLUMN = EMOJI.splitlines()[1].index("torch.log")  # in code points


async def test_utf16_positions_count_surrogate_pairs(client: LanguageClient, workspace: Path):
    uri = (workspace / "emoji.py").as_uri()
    (d,) = (await open_and_wait(client, uri, EMOJI)).diagnostics
    assert d.range.start == lsp.Position(1, COLUMN + 2)
    (noqa,) = [a for a in await actions_at(client, uri, d) if "noqa" in a.title]
    (edit,) = edits_of(noqa, uri)
    assert edit.range.start.character == len(EMOJI.splitlines()[1]) + 2
    hover = await client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(uri), lsp.Position(1, COLUMN + 2))
    )
    assert hover is not None


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=SERVER, client_factory=make_client), scope="module"
)
async def utf32_client(lsp_client: LanguageClient, workspace: Path):
    result = await lsp_client.initialize_session(
        lsp.InitializeParams(
            capabilities=capabilities(["utf-32", "utf-16"], resolve=True),
            root_uri=workspace.as_uri(),
        )
    )
    lsp_client.init_result = result  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


async def test_utf32_is_negotiated_when_offered(utf32_client: LanguageClient, workspace: Path):
    result: Any = utf32_client.init_result  # type: ignore[attr-defined]
    assert result.capabilities.position_encoding == lsp.PositionEncodingKind.Utf32
    registrations: list[lsp.Registration] = utf32_client.registrations  # type: ignore[attr-defined]
    for _ in range(int(TIMEOUT / 0.05)):
        if registrations:
            break
        await asyncio.sleep(0.05)
    (watch,) = registrations
    assert watch.method == lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES
    assert "pyproject.toml" in str(watch.register_options)
    uri = (workspace / "emoji32.py").as_uri()
    (d,) = (await open_and_wait(utf32_client, uri, EMOJI)).diagnostics
    assert d.range.start == lsp.Position(1, COLUMN)


async def test_fix_all_is_resolved_lazily(utf32_client: LanguageClient, workspace: Path):
    example = _safe_fix_example()
    if example is None:
        pytest.skip("no rule has a safe fix yet")
    code, source = example
    folder = workspace / "lazy"
    folder.mkdir()
    (folder / "pyproject.toml").write_text(f'[tool.numlint]\nselect = ["{code}"]\n')
    uri = (folder / "m.py").as_uri()
    await open_and_wait(utf32_client, uri, source)
    (action,) = await actions_at(utf32_client, uri, only=[lsp.CodeActionKind.SourceFixAll])
    assert action.edit is None
    resolved = await utf32_client.code_action_resolve_async(action)
    fixed = apply_edits(source, edits_of(resolved, uri))
    assert fixed == api.fix_source(source, str(folder / "m.py")).source


async def test_saving_a_file_relints_open_documents_that_read_it(
    client: LanguageClient, workspace: Path
) -> None:
    """A helper's log depends on what a caller in another file passes: saving the caller
    re-lints the helper's open document."""
    pkg = workspace / "crosspkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    losses = pkg / "losses.py"
    losses.write_text(
        "import torch\n\n\ndef nll(p, t):\n    return -torch.log(p.gather(1, t)).mean()\n"
    )
    train = pkg / "train.py"
    calling = (
        "import torch\n\nfrom .losses import nll\n\n\n"
        "def step(x, t):\n    return nll(torch.softmax(x, -1), t)\n"
    )
    train.write_text(calling)
    first = await open_and_wait(client, losses.as_uri(), losses.read_text())
    assert codes(first) == ["NUM101"]
    open_doc(client, train.as_uri(), calling)
    fixed = calling.replace("torch.softmax(x, -1)", "torch.log_softmax(x, -1).exp()")
    train.write_text(fixed)
    mark = len(published(client))
    change_doc(client, train.as_uri(), fixed, 2)
    client.text_document_did_save(
        lsp.DidSaveTextDocumentParams(lsp.TextDocumentIdentifier(train.as_uri()))
    )
    again = await wait_for(client, losses.as_uri(), mark)
    assert codes(again) == []


async def test_probe_this_finding_code_action(client: LanguageClient, workspace: Path) -> None:
    """The code action runs the probe in a worker process; the verdict comes back, and
    appears in the diagnostic's related information and hover."""
    uri = (workspace / "probe_me.py").as_uri()
    first = await open_and_wait(client, uri, LOG_SOFTMAX)
    (diag,) = first.diagnostics
    answer = await client.text_document_code_action_async(
        lsp.CodeActionParams(
            text_document=lsp.TextDocumentIdentifier(uri),
            range=diag.range,
            context=lsp.CodeActionContext(diagnostics=[diag], only=["source.numlint.probe"]),
        )
    )
    # lsprotocol's client-side hook reads any action holding a "command" as a Command, so
    # the action arrives as Command(command=<the action's command object, as text>)
    (item,) = answer or []
    assert item.title == "numlint: probe NUM101 on sample tensors"
    inner = item.command if isinstance(item, lsp.CodeAction) else item.command
    if isinstance(inner, str):
        inner = lsp.Command(**ast.literal_eval(inner))
    command = inner
    assert isinstance(command, lsp.Command) and command.command == "numlint.probe"
    mark = len(published(client))
    result = await client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command.command, command.arguments)
    )
    assert result["verdict"] == "confirmed" and "fix finite" in result["evidence"]

    def verdict_in(p: lsp.PublishDiagnosticsParams) -> bool:
        infos = [i for d in p.diagnostics for i in (d.related_information or [])]
        return any(i.message.startswith("probe: confirmed") for i in infos)

    await wait_for(client, uri, mark, where=verdict_in)
    hover = await client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(uri), diag.range.start)
    )
    assert hover is not None and "probe: confirmed" in hover.contents.value
