"""Every ``musiceval`` subcommand, in one registry.

A command module (those of :mod:`musiceval.commands`, or a module of another package exposed under
the entry-point group ``musiceval.commands``) registers its :class:`Command` when imported;
:func:`musiceval.cli.build_parser` adds each registered command as a subparser, in registration
order, and runs the one asked for.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Callable

from musiceval.registry import Registry


@dataclass(frozen=True)
class Command:
    name: str
    #: one line, for ``musiceval --help``
    help: str
    #: adds the command's arguments to its subparser
    configure: Callable[[argparse.ArgumentParser], None]
    #: runs it and returns the exit status; None when ``configure`` adds subcommands that set
    #: their own (``musiceval data list|prepare|check``)
    run: Callable[[argparse.Namespace], int] | None = None


COMMANDS: Registry[Command] = Registry(
    "command",
    builtin_modules=tuple(f"musiceval.commands.{m}" for m in (
        "score", "generate", "merge", "rewrite", "mir_live", "init", "compare", "power", "cache", "data", "run",
        "report")),
    entry_point_group="musiceval.commands",
)


def register_command(name: str, *, help: str, configure: Callable[[argparse.ArgumentParser], None],
                     run: Callable[[argparse.Namespace], int] | None = None) -> Command:
    """Register subcommand ``name`` of ``musiceval`` (replacing one of that name)."""
    command = Command(name, help, configure, run)
    COMMANDS.register(name, command, replace=True)
    return command
