"""Command line: check | rule | rules | docs | probe | lsp | report (ruff's conventions)."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from numlint import __version__, api
from numlint.config import Config, ConfigError, load
from numlint.diagnostic import Diagnostic, parse_error
from numlint.output import RenderEnv, fixable, formats

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class UsageError(Exception):
    """A problem with how numlint was called: exit 2 with a message."""


def _codes(values: list[str] | None) -> list[str] | None:
    if values is None:
        return None
    return [c.strip() for v in values for c in v.split(",") if c.strip()]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="numlint", description="A linter for numerically unsafe PyTorch code."
    )
    parser.add_argument("--version", action="version", version=f"numlint {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    check = sub.add_parser("check", help="lint files and directories")
    check.add_argument(
        "paths", nargs="*", default=["."], help="files or directories ('-' for stdin)"
    )
    check.add_argument(
        "--select",
        action="append",
        metavar="CODES",
        help="rules to enable (codes, prefixes, names, ALL)",
    )
    check.add_argument(
        "--extend-select",
        action="append",
        metavar="CODES",
        help="rules to enable on top of the selection",
    )
    check.add_argument("--ignore", action="append", metavar="CODES", help="rules to disable")
    check.add_argument(
        "--exclude", action="append", metavar="GLOBS", help="paths to skip when walking directories"
    )
    check.add_argument("--fix", action="store_true", help="apply safe fixes")
    check.add_argument(
        "--add-noqa",
        action="store_true",
        help="suppress every current finding with a `# noqa: CODE` comment on its line",
    )
    check.add_argument(
        "--unsafe-fixes", action="store_true", help="also apply (and show) unsafe fixes"
    )
    check.add_argument(
        "--diff", action="store_true", help="show the fixes as a diff; change nothing"
    )
    check.add_argument("--output-format", choices=sorted(formats()), default="full")
    check.add_argument("--statistics", action="store_true", help="count findings per rule")
    check.add_argument(
        "--min-confidence",
        choices=("low", "medium", "high"),
        help="hide findings below this confidence (default: medium; `low` shows every finding)",
    )
    check.add_argument(
        "--exit-zero", action="store_true", help="exit 0 even when there are findings"
    )
    check.add_argument("-q", "--quiet", action="store_true", help="print findings only, no summary")
    check.add_argument(
        "--stdin-filename", metavar="PATH", help="the name of the file read from stdin"
    )
    check.add_argument(
        "--config", metavar="PYPROJECT", help="use this pyproject.toml for every file"
    )
    check.add_argument("--isolated", action="store_true", help="ignore configuration files")
    check.add_argument(
        "--force-exclude",
        action="store_true",
        help="apply exclusions to files named on the command line too (for pre-commit)",
    )
    check.add_argument(
        "--no-cache", action="store_true", help="neither read nor write .numlint_cache/"
    )
    check.add_argument(
        "--probe", action="store_true", help="confirm each finding on sample tensors (needs torch)"
    )
    check.add_argument("--probe-device", default="cpu", help="device for --probe (cpu, cuda)")
    check.add_argument(
        "--stress-report",
        metavar="REPORT.json",
        help="mark the findings a `numlint.stress` report confirmed in your model",
    )

    rule = sub.add_parser("rule", help="print a rule's documentation")
    rule.add_argument("selector", help="code (NUM101) or name (log-of-softmax)")
    rules = sub.add_parser("rules", help="list every rule")
    rules.add_argument("--json", action="store_true")
    docs = sub.add_parser("docs", help="write the rule reference in rules/")
    docs.add_argument("--check", action="store_true", help="exit 1 when rules/ is stale")
    docs.add_argument(
        "--dir",
        help="output directory (default: rules/ of the numlint checkout numlint runs from)",
    )
    sub.add_parser("clean", help="remove .numlint_cache/")
    for name, text in (
        ("probe", "run a rule's runtime probe and print the evidence"),
        ("lsp", "start the language server on stdio"),
        ("report", "summarise and plot a runtime monitor log"),
    ):
        p = sub.add_parser(name, help=text, add_help=False)
        p.add_argument("args", nargs=argparse.REMAINDER)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    if argv and argv[0] in ("probe", "lsp", "report"):
        return _delegate(argv[0], argv[1:])
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return EXIT_ERROR if exc.code else EXIT_CLEAN
    try:
        if args.command == "check":
            return cmd_check(args)
        if args.command == "rule":
            return cmd_rule(args.selector)
        if args.command == "rules":
            return cmd_rules(args.json)
        if args.command == "clean":
            from numlint.cache import clean

            print("removed .numlint_cache/" if clean() else "no cache to remove")
            return EXIT_CLEAN
        if args.command == "docs":
            from numlint.docs import checkout_docs_dir, write_docs

            directory = Path(args.dir) if args.dir else checkout_docs_dir()
            if directory is None:
                raise UsageError(
                    "`numlint docs` writes numlint's rule reference into its own source "
                    "checkout; this numlint is installed, so name a directory: --dir DIR"
                )
            return write_docs(directory, check=args.check)
    except (UsageError, ConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `numlint check | head`: stop quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FINDINGS
    parser.print_help()
    return EXIT_ERROR


def _delegate(command: str, rest: list[str]) -> int:
    """Subcommands whose implementation lives with its optional dependencies."""
    if command == "lsp":  # options first: `--help` and a bad flag need no optional dependency
        from numlint.lsp.options import parser as lsp_parser

        try:
            lsp_parser().parse_args(rest)
        except SystemExit as exc:
            return EXIT_ERROR if exc.code else EXIT_CLEAN
    try:
        if command == "probe":
            from numlint.probe.cli import main as run
        elif command == "lsp":
            import numlint.lsp.server  # noqa: F401 (pygls and lsprotocol: the `lsp` extra)
            from numlint.lsp import main as run
        else:
            from numlint.monitor.report import main as run
    except ImportError as exc:
        extra = {"probe": "probe", "lsp": "lsp", "report": "report"}[command]
        print(
            f"error: `numlint {command}` needs optional dependencies ({exc.name or exc}); "
            f"install them with `pip install 'numlint[{extra}]'`",
            file=sys.stderr,
        )
        return EXIT_ERROR
    return run(rest)


def cmd_rule(selector: str) -> int:
    from numlint.docs import rule_page
    from numlint.rule import rule_by_selector

    rule = rule_by_selector(selector)
    if rule is None:
        raise UsageError(f"unknown rule `{selector}` (see `numlint rules`)")
    print(rule_page(rule))
    return EXIT_CLEAN


def cmd_rules(as_json: bool) -> int:
    from numlint.rule import all_rules

    rows = [
        {
            "code": r.CODE,
            "name": r.NAME,
            "summary": r.summary(),
            "default": r.DEFAULT_ENABLED,
            "fix": _fix_kind(r),
        }
        for r in all_rules()
    ]
    if as_json:
        print(json.dumps(rows, indent=2))
    else:
        for row in rows:
            flag = "" if row["default"] else " (off by default)"
            print(f"{row['code']}  {row['name']:<32} {row['summary']}{flag}")
    return EXIT_CLEAN


def _fix_kind(rule: Any) -> str:
    from numlint.docs import fix_kind

    return fix_kind(rule)


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "select": _codes(args.select),
        "extend_select": _codes(args.extend_select),
        "ignore": _codes(args.ignore),
        "exclude": _codes(args.exclude),
        "min_confidence": args.min_confidence,
        "stress_report": os.path.abspath(args.stress_report) if args.stress_report else None,
    }


def _base_config(args: argparse.Namespace) -> Config | None:
    if args.isolated:
        return Config()
    if args.config:
        found = load(Path(args.config))
        return found if found is not None else Config()
    return None


def cmd_check(args: argparse.Namespace) -> int:
    config = _base_config(args)
    overrides = _overrides(args)
    Config().with_overrides(**overrides)  # a selector matching no rule: exit 2 before linting
    if args.probe and not _has_torch():
        raise UsageError("--probe needs torch: pip install 'numlint[probe]'")
    env = RenderEnv(unsafe_fixes=args.unsafe_fixes)
    diagnostics: list[Diagnostic] = []
    diffs: list[str] = []
    warnings: set[str] = set()
    stdin = args.paths == ["-"]
    if args.add_noqa:
        if stdin or args.fix or args.diff:
            raise UsageError("--add-noqa works on files, without --fix or --diff")
        return _add_noqa(args, config, overrides)
    configs = api.ConfigResolver(config, overrides)
    paths = [p for p in args.paths if p == "-" or os.path.lexists(p)]
    missing = [p for p in args.paths if p not in paths]
    diagnostics.extend(parse_error(p, "could not read: no such file or directory") for p in missing)
    env.files.extend(missing)
    if stdin:
        name = args.stdin_filename or "-"
        source = sys.stdin.read()
        cfg = api.resolve_config(config, name, overrides)
        warnings.update(cfg.warnings)
        if args.force_exclude and args.stdin_filename and api.excluded(Path(name), cfg):
            if args.fix and not args.diff:  # as a formatter would: the text back, unchanged
                sys.stdout.write(source)
            return EXIT_CLEAN
        result = _check_text(source, name, cfg, args, env, diffs)
        diagnostics.extend(result)
        if args.fix and not args.diff:
            sys.stdout.write(env.sources[name])
    elif not paths:
        pass
    elif args.fix or args.diff:
        for f in _files(paths, args, config, overrides, configs):
            name = str(f)
            cfg = configs(name)
            warnings.update(cfg.warnings)
            try:
                source, encoding, _ = api.read_source(f)
            except api.SourceError as exc:
                env.files.append(name)
                diagnostics.append(api.parse_error(name, f"could not read: {exc}"))
                continue
            found = _check_text(source, name, cfg, args, env, diffs)
            if args.fix and not args.diff and env.sources[name] != source:
                api.write_atomic(f, env.sources[name], encoding)
            diagnostics.extend(found)
    else:
        try:
            results = list(
                api.lint_names(
                    paths,
                    config,
                    overrides,
                    cache=not args.no_cache,
                    force_exclude=args.force_exclude,
                    verdicts=judged,
                    resolver=configs,
                )
            )
        except FileNotFoundError as exc:  # removed while numlint ran
            raise UsageError(f"{exc}: no such file or directory") from None
        for name, found in results:
            warnings.update(configs(name).warnings)
            env.files.append(name)
            if found and any(d.code != "NUM000" for d in found):
                try:
                    env.sources[name] = api.read_source(Path(name))[0]
                except api.SourceError:
                    pass
            diagnostics.extend(found)
    if not stdin and paths and len(env.files) == len(missing):
        warnings.add("No Python files found under the given path(s)")
    for w in sorted(warnings):
        print(f"warning: {w}", file=sys.stderr)
    if args.probe:
        diagnostics = _probe(diagnostics, env, args.probe_device)
    _stress(diagnostics, args, configs)
    out = sys.stderr if stdin and args.fix else sys.stdout
    if args.diff:
        text = "".join(diffs)
        if text:
            out.write(text)
        if not args.quiet:
            n = sum(1 for d in diagnostics if fixable(d, args.unsafe_fixes))
            print(
                f"Would fix {n} error{'s' * (n != 1)}." if n else "No fixes available.",
                file=sys.stderr,
            )
        return EXIT_CLEAN if args.exit_zero or not text else EXIT_FINDINGS
    if args.statistics:
        _print_statistics(diagnostics, args, out)
    else:
        text = formats()[args.output_format](diagnostics, env)
        if args.quiet and args.output_format in ("full", "concise"):
            text = "\n".join(text.split("\n")[: -len(_summary_lines(diagnostics, env)) or None])
        if text:
            print(text, file=out)
    return EXIT_CLEAN if args.exit_zero or not diagnostics else EXIT_FINDINGS


def _add_noqa(args: argparse.Namespace, config: Config | None, overrides: dict[str, Any]) -> int:
    """`--add-noqa`: write `# noqa: CODE` for every finding, report how many lines changed."""
    from numlint.suppress import add_noqa

    paths = [p for p in args.paths if os.path.lexists(p)]
    for p in args.paths:
        if p not in paths:
            print(f"warning: {p}: no such file or directory", file=sys.stderr)
    added = 0
    configs = api.ConfigResolver(config, overrides)
    for f in _files(paths, args, config, overrides, configs) if paths else []:
        name = str(f)
        cfg = configs(name)
        try:
            source, encoding, _ = api.read_source(f)
        except api.SourceError as exc:
            print(f"warning: {name}: {exc}", file=sys.stderr)
            continue
        found = api.check_source(source, name, cfg, verdicts=judged)
        result = add_noqa(source, found)
        for d in result.skipped:
            print(
                f"warning: {name}:{d.row}:{d.column}: {d.code} not suppressed: "
                "no line of it can hold a comment",
                file=sys.stderr,
            )
        for d in found:
            if d.code == "NUM000":
                print(f"warning: {name}:{d.row}:{d.column}: NUM000 {d.message}", file=sys.stderr)
        if result.source != source:
            api.write_atomic(f, result.source, encoding)
            added += result.added
    if not args.quiet:
        print(f"Added {added} noqa directive{'s' * (added != 1)}.", file=sys.stderr)
    return EXIT_CLEAN


def _has_torch() -> bool:
    try:
        return importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):
        return False


def _files(
    paths: list[str],
    args: argparse.Namespace,
    config: Config | None,
    overrides: dict[str, Any],
    configs: api.ConfigResolver,
) -> list[Path]:
    try:
        return list(api.iter_files(paths, config, overrides, args.force_exclude, resolver=configs))
    except FileNotFoundError as exc:
        raise UsageError(f"{exc}: no such file or directory") from None


def _summary_lines(diagnostics: list[Diagnostic], env: RenderEnv) -> list[str]:
    from numlint.output import summary

    return summary(diagnostics, env).split("\n")


def _check_text(
    source: str,
    name: str,
    cfg: Config,
    args: argparse.Namespace,
    env: RenderEnv,
    diffs: list[str],
) -> list[Diagnostic]:
    """Lint (and with --fix/--diff, fix) one text; record its final text in env.sources."""
    env.files.append(name)
    if args.fix or args.diff:
        result = api.fix_source(source, name, cfg, unsafe=args.unsafe_fixes, verdicts=judged)
        if result.error:
            print(f"warning: {name}: fixes not applied: {result.error}", file=sys.stderr)
        if args.diff:
            if result.source != source:
                import difflib

                diffs.append(
                    "".join(
                        difflib.unified_diff(
                            source.splitlines(keepends=True),
                            result.source.splitlines(keepends=True),
                            f"a/{name}",
                            f"b/{name}",
                        )
                    )
                )
            env.sources[name] = source
            return api.check_source(source, name, cfg, verdicts=judged)
        env.fixed += result.fixed
        env.sources[name] = result.source
        return result.remaining
    env.sources[name] = source
    return api.check_source(source, name, cfg, verdicts=judged)


def _print_statistics(diagnostics: list[Diagnostic], args: argparse.Namespace, out: Any) -> None:
    """Findings per rule, most frequent first: a table, or with `--output-format json` a
    JSON array of {code, name, count, fixable} (as ruff)."""
    counts = Counter((d.code, d.name) for d in diagnostics)
    fixes = {d.code for d in diagnostics if fixable(d, args.unsafe_fixes)}
    rows = [
        {"code": code, "name": name, "count": n, "fixable": code in fixes}
        for (code, name), n in counts.most_common()
    ]
    if args.output_format == "json":
        print(json.dumps(rows, indent=2), file=out)
        return
    for row in rows:
        mark = "[*] " if row["fixable"] else ""
        print(f"{row['count']:>5}\t{row['code']}\t{mark}{row['name']}", file=out)


def _stress(
    diagnostics: list[Diagnostic], args: argparse.Namespace, configs: api.ConfigResolver
) -> None:
    """Exit 2 for a stress report (`--stress-report`, else the `stress-report` of a linted
    file's configuration) that cannot be read; its verdicts are already on the findings
    (`judged`, passed to numlint.api)."""
    reports = {args.stress_report} if args.stress_report else set()
    if not reports:
        seen: set[str] = set()
        for d in diagnostics:
            if d.filename not in seen:
                seen.add(d.filename)
                report = configs(d.filename).stress_report
                if report:
                    reports.add(report)
    if not reports:
        return
    from numlint.stress.report import StressReportError
    from numlint.stress.verdict import cached_report

    for path in sorted(reports):
        try:
            cached_report(path)
        except StressReportError as exc:
            raise UsageError(str(exc)) from None


def judged(diagnostics: list[Diagnostic], report: str, sources: dict[str, str]) -> list[Diagnostic]:
    """A stress report's verdicts on the findings (numlint.api.Verdicts): numlint.stress
    loads only once a configuration names a report."""
    from numlint.stress.verdict import judged as verdicts

    return verdicts(diagnostics, report, sources)


def _probe(diagnostics: list[Diagnostic], env: RenderEnv, device: str) -> list[Diagnostic]:
    try:
        from numlint.probe import annotate
    except ImportError as exc:
        raise UsageError(
            f"--probe needs torch ({exc.name or exc}): pip install 'numlint[probe]'"
        ) from None
    try:
        return annotate(diagnostics, env.sources, device=device)
    except ModuleNotFoundError as exc:
        raise UsageError(
            f"--probe needs torch ({exc.name or exc}): pip install 'numlint[probe]'"
        ) from None
