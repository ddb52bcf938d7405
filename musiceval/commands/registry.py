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


#: the builtin commands, in the order ``musiceval --help`` lists them, each in
#: ``musiceval/commands/<name with _ for ->.py``; a plugin's follow
BUILTIN = ("score", "generate", "merge", "rewrite", "mir-live", "init", "setup", "compare", "power", "stability",
           "cache", "data", "run", "report")
COMMANDS: Registry[Command] = Registry(
    "command",
    builtin_modules=tuple(f"musiceval.commands.{name.replace('-', '_')}" for name in BUILTIN),
    entry_point_group="musiceval.commands",
)


def ordered() -> list[Command]:
    """Every registered command: the builtin ones in :data:`BUILTIN` order (whatever imported them
    first), then the others in registration order."""
    rank = {name: k for k, name in enumerate(BUILTIN)}
    return [c for _, c in sorted(COMMANDS.items(), key=lambda kv: rank.get(kv[0], len(rank)))]


def register_command(name: str, *, help: str, configure: Callable[[argparse.ArgumentParser], None],
                     run: Callable[[argparse.Namespace], int] | None = None) -> Command:
    """Register subcommand ``name`` of ``musiceval`` (replacing one of that name)."""
    command = Command(name, help, configure, run)
    COMMANDS.register(name, command, replace=True)
    return command
