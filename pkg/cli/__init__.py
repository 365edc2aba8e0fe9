"""The `pkg` command line: build a PKG, query it, inspect it.

The group lists COMMANDS without importing them; a command's module is imported when the command runs
or shows its own help: `pkg.cli.commands` (build, read and serve a PKG) or `pkg.cli.evaluate` (the
commands that run an LLM). A vector-mode `pkg query` thus never loads the evaluation, the reranker, the
parsers nor BM25's SciPy (bench/results/cold-query-*.json)."""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass

import click

from pkg.errors import PkgError

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


@dataclass(frozen=True)
class CommandEntry:
    """A command as `pkg --help` lists it (its arguments and what it does), and the module defining it
    under the command's own name."""

    arguments: str
    summary: str
    module: str


COMMANDS: dict[str, CommandEntry] = {
    "build": CommandEntry("PATH...", "parse code into NAME/IMPL/BLOCK nodes with embeddings", "pkg.cli.commands"),
    "query": CommandEntry('"TEXT"', "retrieve (and prune) the most similar functions or blocks", "pkg.cli.commands"),
    "context": CommandEntry(
        "PATH[:LINE]", "the definitions the code there uses from other files, as stubs", "pkg.cli.commands"
    ),
    "graph": CommandEntry(
        "SUBCOMMAND", "who calls a function, what it calls, what a file contains", "pkg.cli.commands"
    ),
    "stats": CommandEntry("", "count nodes and relationships", "pkg.cli.commands"),
    "tune": CommandEntry("", "fine-tune the embedder on the PKG's own functions, re-embed it", "pkg.cli.commands"),
    "serve": CommandEntry("", "serve search and context to agents over MCP (stdio or HTTP)", "pkg.cli.commands"),
    "watch": CommandEntry("PATH...", "keep a PKG up to date with files as they change", "pkg.cli.commands"),
    "compare": CommandEntry("", "NoRAG vs PKG vs reranked pass@1 on HumanEval / MBPP / repo", "pkg.cli.evaluate"),
    "report": CommandEntry("OUT_DIR", "the table of a finished comparison, from its saved results", "pkg.cli.evaluate"),
    "generate": CommandEntry(
        '"TASK"', "write code for your own task: one candidate per arm, the best checked one", "pkg.cli.evaluate"
    ),
}


class LazyGroup(click.Group):
    """The top-level group: it lists COMMANDS without importing them and imports one when it is used."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        command: click.Command = getattr(importlib.import_module(entry.module), cmd_name)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(f"{name} {entry.arguments}".rstrip(), entry.summary) for name, entry in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="pkg-graph", prog_name="pkg")
def cli() -> None:
    """PKG: build a Programming Knowledge Graph from code and serve context for code generation."""


def main() -> None:
    """Entry point: run the CLI, turning every expected failure into one line and an exit code."""
    try:
        code = cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("pkg: aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        click.echo(f"pkg: {exc.format_message()}", err=True)
        sys.exit(exc.exit_code)
    except PkgError as exc:
        click.echo(f"pkg: {exc}", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        click.echo("pkg: interrupted", err=True)
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)
