"""The command line. Thin: parse options, call the runner, hand results to the reporter."""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path

import click

from . import __version__
from .config import Config, ConfigError, check_codes, load_config

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 130


class DefaultToMigrate(click.Group):
    """``dali-migrate PATH...`` means ``dali-migrate migrate PATH...``."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h", "--version"):
            args = ["migrate", *args]
        return super().parse_args(ctx, args)


def _config(paths: tuple[str, ...], config_file: str | None, select, ignore, exclude) -> Config:
    start = Path(paths[0]) if paths else Path.cwd()
    try:
        base = load_config(start, Path(config_file) if config_file else None)
        config = base.with_cli(select, ignore, exclude)
        check_codes(replace(config, select=config.select - base.select, ignore=config.ignore - base.ignore),
                    "--select/--ignore")
    except ConfigError as error:
        raise click.UsageError(str(error)) from None
    return config


def _config_paths(paths: tuple[str, ...], stdin_filename: str | None) -> tuple[str, ...]:
    """Where the configuration is looked for: the paths, or the name given to code on stdin."""
    return (stdin_filename or ".",) if paths == ("-",) else paths


def _run_options(jobs: int | None, shard: str | None, cache_dir: Path | None, fmt: str = "text"):
    from .report import progress_callbacks
    from .runner import RunOptions, parse_shard

    try:
        shard_pair = parse_shard(shard) if shard else (1, 1)
    except ValueError as error:
        raise click.UsageError(str(error)) from None
    on_start, on_file = progress_callbacks(sys.stderr, enabled=fmt == "text")
    return RunOptions(jobs=jobs or os.cpu_count() or 1, shard=shard_pair, cache_dir=cache_dir,
                      on_start=on_start, on_file=on_file)


def _cache_dir(config: Config, no_cache: bool) -> Path | None:
    from .cache import DEFAULT_FOLDER, FOLDER_VARIABLE

    if no_cache:
        return None
    return Path(os.environ.get(FOLDER_VARIABLE) or (config.root or Path.cwd()) / DEFAULT_FOLDER)


def selection_options(command):
    command = click.option("--shard", metavar="K/N", help="Only the K-th of N equal parts of the files (for CI matrices).")(command)
    command = click.option("-j", "--jobs", type=click.IntRange(min=1), help="Worker processes (default: all cores).")(command)
    command = click.option("--exclude", multiple=True, help="Glob of paths to skip (repeatable).")(command)
    command = click.option("--ignore", multiple=True, help="Rule codes or prefixes to skip.")(command)
    command = click.option("--select", multiple=True, help="Only these rule codes or prefixes.")(command)
    command = click.option("--config", "config_file", type=click.Path(dir_okay=False),
                           help="pyproject.toml to read [tool.dali-migrate] from.")(command)
    return command


@click.group(cls=DefaultToMigrate, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="dali-migrate")
def main() -> None:
    """Migrate NVIDIA DALI pipeline-mode code to dynamic mode (ndd).

    `dali-migrate PATH...` rewrites files in place; see `dali-migrate migrate --help`.
    """
    import signal

    # Ctrl-C is 130, as in shells; click's own handling would exit 1, which means "findings"
    signal.signal(signal.SIGINT, _interrupted)


def _interrupted(signum, frame) -> None:
    raise SystemExit(EXIT_INTERRUPTED)


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--diff", "show_diff", is_flag=True, help="Print a unified diff; write nothing. Exit 1 if anything would change.")
@click.option("--check", "check_only", is_flag=True, help="Write nothing. Exit 1 if anything would change.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 when TODOs are left (in-place runs that only want the rewrite).")
@click.option("--exit-non-zero-on-fix", is_flag=True, help="Exit 1 when anything was rewritten (bots that open a pull request).")
@click.option("--exact-only", is_flag=True, help="Migrate only pipelines whose migration gives bit-identical data.")
@click.option("--report", "report_path", type=click.Path(dir_okay=False),
              help="Write a migration report: FILE.json (schema: dali_migrate/data/report.schema.json) or FILE.md.")
@click.option("--stdin-filename", help="With `-` as PATH: the name of the code read from stdin; the migrated code "
                                       "goes to stdout, the report to stderr (editors).")
@selection_options
def migrate(paths, show_diff, check_only, exit_zero, exit_non_zero_on_fix, exact_only, report_path, stdin_filename,
            config_file, select, ignore, exclude, jobs, shard):
    """Rewrite pipeline-mode DALI code in PATHS (.py, .pyi, .ipynb) into dynamic mode.

    Exit status: 2 on an error, 1 when a TODO is left (unless --exit-zero), when anything was
    rewritten with --exit-non-zero-on-fix, or, with --diff or --check, when anything would
    change; 0 otherwise."""
    from .report import write_migration_report
    from .runner import run_migrate

    config = replace(_config(_config_paths(paths, stdin_filename), config_file, select, ignore, exclude),
                     exact_only=exact_only)
    write = not (show_diff or check_only)
    if paths == ("-",):
        results = [_migrate_stdin(stdin_filename or "-", config)]
        write_migration_report(results, sys.stderr, show_diff=False, wrote=False)
    else:
        results = run_migrate([Path(p) for p in paths], config, write=write, options=_run_options(jobs, shard, None))
        write_migration_report(results, sys.stdout, show_diff, wrote=write)
    if report_path:
        from .migration_report import write_report

        write_report(results, Path(report_path), wrote=write)
    if any(r.error for r in results):
        sys.exit(EXIT_ERROR)
    if (not write or exit_non_zero_on_fix) and any(r.changed for r in results):
        sys.exit(EXIT_FINDINGS)
    if not exit_zero and any(d.fix == "todo" for r in results for d in r.diagnostics):
        sys.exit(EXIT_FINDINGS)


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--format", "fmt", type=click.Choice(["text", "json", "github", "sarif"]), default="text", show_default=True)
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when something is found.")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the result cache (.dali-migrate-cache/).")
@click.option("--statistics", is_flag=True, help="Print how many findings each rule has, not the findings.")
@click.option("--output-file", type=click.Path(dir_okay=False), help="Write the report to this file, not stdout.")
@click.option("--stdin-filename", help="With `-` as PATH: the name of the code read from stdin (editors).")
@click.option("--add-noqa", is_flag=True, help="Write `# noqa: DMxxx` on every finding (staged roll-outs); exit 0.")
@selection_options
def check(paths, fmt, exit_zero, no_cache, statistics, output_file, stdin_filename, add_noqa, config_file, select,
          ignore, exclude, jobs, shard):
    """Report pipeline-mode DALI APIs in PATHS (.py, .pyi, .ipynb), for pre-commit and CI.
    PATH `-` reads one file from stdin."""
    from .report import write_check_report, write_statistics
    from .runner import run_check

    config = _config(_config_paths(paths, stdin_filename), config_file, select, ignore, exclude)
    if paths == ("-",):
        results = [_check_stdin(stdin_filename or "-", config)]
    else:
        options = _run_options(jobs, shard, _cache_dir(config, no_cache), fmt)
        results = run_check([Path(p) for p in paths], config, options)
    if add_noqa:
        _add_noqa(results)
        return
    with _report_stream(output_file) as stream:
        if statistics:
            write_statistics(results, stream)
        else:
            write_check_report(results, fmt, stream)
    if any(r.error for r in results):
        sys.exit(EXIT_ERROR)
    if any(r.diagnostics for r in results) and not exit_zero:
        sys.exit(EXIT_FINDINGS)


def _add_noqa(results) -> None:
    from .add_noqa import add_noqa
    from .files import atomic_write, read_regular

    added = 0
    for result in results:
        if result.error or not result.diagnostics:
            continue
        path = Path(result.path)
        data = read_regular(path)
        new = add_noqa(data, result.path, result.diagnostics)
        if new != data:
            atomic_write(path, new)
            added += len({(d.cell, d.line) for d in result.diagnostics})
    click.echo(f"Added noqa comments for {added} finding line(s).")
    if any(r.error for r in results):
        for r in results:
            if r.error:
                click.echo(f"{r.path}: error {r.error}", err=True)
        sys.exit(EXIT_ERROR)


def _migrate_stdin(name: str, config: Config):
    """The migrated code on stdout, the original when nothing changes or on an error."""
    from .runner import migrate_file

    data = sys.stdin.buffer.read()
    result = migrate_file(data, name, config)
    sys.stdout.buffer.write(result.new_source if result.changed and result.error is None else data)
    sys.stdout.flush()
    return result


def _check_stdin(name: str, config: Config):
    from .runner import check_file

    return check_file(sys.stdin.buffer.read(), name, config)


def _report_stream(output_file: str | None):
    import contextlib

    if output_file is None:
        return contextlib.nullcontext(sys.stdout)
    return open(output_file, "w", encoding="utf-8", newline="\n")


@main.command()
def rules():
    """List every rule with its code, whether the codemod fixes it, and how safe the fix is."""
    from .rules import ALL_RULES

    for rule in ALL_RULES:
        click.echo(f"{rule.code}  {rule.name:<28} fix: {rule.fix:<9} safety: {rule.safety:<16} {rule.message}")


@main.command()
@click.argument("code")
def explain(code):
    """Show the documentation of rule CODE."""
    from .rules import RULES_BY_CODE

    rule = RULES_BY_CODE.get(code.upper())
    if rule is None:
        raise click.UsageError(f"unknown rule {code!r}; `dali-migrate rules` lists them")
    click.echo(f"{rule.code} ({rule.name}): {rule.message}\nFix: {rule.fix}\n\n{rule.explained()}")


@main.command()
@click.argument("original", type=click.Path(exists=True, dir_okay=False))
@click.argument("migrated", required=False, type=click.Path(exists=True, dir_okay=False))
@click.option("--pipeline", "pipelines", multiple=True, help="Only these pipelines (default: every one).")
@click.option("--arg", "args", multiple=True, help="name=value passed to the pipeline (Python literal).")
@click.option("--iterations", default=3, show_default=True, help="Batches to compare.")
@click.option("--batch-size", type=int, help="Override the batch size.")
@click.option("--device", type=click.Choice(["cpu", "gpu"]), default="cpu", show_default=True)
@click.option("--rtol", default=1e-5, show_default=True, help="Relative tolerance for floats.")
@click.option("--atol", default=1e-6, show_default=True, help="Absolute tolerance for floats.")
@click.option("--no-align-rng", is_flag=True, help="Do not feed the original's random ops the ndd RNG stream.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), help="Write the report as JSON here ('-': stdout).")
@click.option("--timeout", default=300, show_default=True, help="Seconds each side may run.")
def verify(original, migrated, pipelines, args, iterations, batch_size, device, rtol, atol,
           no_align_rng, json_path, timeout):
    """Run ORIGINAL and MIGRATED (default: ORIGINAL migrated in memory) and diff every sample."""
    from .verify import VerifyOptions, verify_files
    from .verify.report import write_verify_report

    options = VerifyOptions(
        pipelines=tuple(pipelines), args=_parse_args(args), iterations=iterations,
        batch_size=batch_size, device=device, rtol=rtol, atol=atol, align_rng=not no_align_rng,
        timeout=timeout,
    )
    report = verify_files(Path(original), Path(migrated) if migrated else None, options)
    write_verify_report(report, sys.stdout, json_path)
    sys.exit(report.exit_code)


def _parse_args(pairs: tuple[str, ...]) -> dict:
    import ast

    parsed = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.isidentifier():
            raise click.UsageError(f"--arg takes name=value, got {pair!r}")
        try:
            parsed[name] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            parsed[name] = value  # a bare string
    return parsed
