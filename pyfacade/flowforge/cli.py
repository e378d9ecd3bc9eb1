"""The ``flowforge`` command line: the group, global options, error handling.

Commands live in their own modules under ``flowforge.commands`` (one per
command or command group: migrate, doctor, and later demo, daemon, worker,
workflow, run, queue) and are listed in ``COMMANDS`` below.  A command parses
its arguments, calls the layer below, and renders — no SQL, no rules.

``main()`` is the only place that decides how failures look: a FlowForge
error or bad input becomes one line on stderr and a non-zero exit, never a
traceback.  Set FLOWFORGE_DEBUG=1 to get the traceback instead.
"""

from __future__ import annotations

import importlib
import os
import sys

import click

from . import __version__, config, errors
from .commands._common import for_the_cli

# (module, attribute) of every subcommand, in help order.
COMMANDS: tuple[tuple[str, str], ...] = (
    ("flowforge.commands.migrate", "migrate"),
    ("flowforge.commands.doctor", "doctor"),
    ("flowforge.commands.demo", "demo"),
    ("flowforge.commands.worker", "worker"),
    ("flowforge.commands.workflow", "workflow"),
    ("flowforge.commands.run", "run"),
    ("flowforge.commands.queue", "queue"),
    ("flowforge.commands.agent", "agent"),
    ("flowforge.commands.org", "org"),
    ("flowforge.commands.trigger", "trigger"),
    ("flowforge.commands.daemon", "daemon"),
    ("flowforge.commands.purge", "purge"),
    ("flowforge.commands.serve", "serve"),
    ("flowforge.commands.server", "status"),
    ("flowforge.commands.server", "stop"),
)

EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--dsn", metavar="DSN",
              help="PostgreSQL DSN (URI or key=value). Default: $FLOWFORGE_DSN, "
                   "else an embedded server in ./.flowforge/pgdata.")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON instead of tables.")
@click.version_option(__version__, prog_name="flowforge")
@click.pass_context
def cli(ctx: click.Context, dsn: str | None, as_json: bool) -> None:
    """FlowForge: workflows that live inside PostgreSQL."""
    ctx.obj = config.resolve(dsn, json=as_json)


def _register() -> None:
    for module_name, attr in COMMANDS:
        cli.add_command(getattr(importlib.import_module(module_name), attr))


_register()


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: run the CLI and turn every failure into one stderr line."""
    debug = os.environ.get("FLOWFORGE_DEBUG", "") not in ("", "0")
    try:
        rc = cli.main(args=argv, prog_name="flowforge", standalone_mode=False)
    except click.exceptions.Abort:
        _fail("aborted", EXIT_INTERRUPTED)
    except click.ClickException as exc:  # usage errors: click prints its own usage line
        exc.show()
        sys.exit(exc.exit_code)
    except errors.FlowForgeError as exc:
        if debug:
            raise
        _fail(str(for_the_cli(exc)), EXIT_ERROR)
    except KeyboardInterrupt:
        _fail("interrupted", EXIT_INTERRUPTED)
    except Exception as exc:  # noqa: BLE001 - the promise is "never a traceback"
        if debug:
            raise
        _fail(f"internal error: {type(exc).__name__}: {exc} (set FLOWFORGE_DEBUG=1 for a traceback)", EXIT_ERROR)
    sys.exit(rc if isinstance(rc, int) else 0)


def _fail(message: str, code: int) -> None:
    flat = " ".join(message.split())  # exactly one line, whatever the message held
    click.echo(f"flowforge: error: {flat}", err=True)
    sys.exit(code)


if __name__ == "__main__":
    main()
