"""Defaults from `[tool.vkverify]` in the nearest pyproject.toml, found by walking up from the working
directory (as ruff and mypy find theirs).

    [tool.vkverify]            # options of any command that has them
    quiet = true
    [tool.vkverify.check]      # options of one command
    format = "sarif"
    reading = ["all_commands_includes_host=false"]

A key is an option's long name (`fail-under` or `fail_under`). The defaults become arguments placed before
the command line's, so a flag given there overrides them. An unknown key is an error naming it.
"""

from __future__ import annotations

import argparse
import tomllib
from pathlib import Path

from .errors import VkverifyError

__all__ = ["ConfigError", "arguments", "find", "table"]

NAME = "pyproject.toml"


class ConfigError(VkverifyError, ValueError):
    """A `[tool.vkverify]` table vkverify cannot use. Seen by the CLI's user: one line, exit 2."""


def find(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above `start`."""
    for folder in (start, *start.parents):
        if (folder / NAME).is_file():
            return folder / NAME
    return None


def table(path: Path) -> dict:
    try:
        with path.open("rb") as f:
            doc = tomllib.load(f)
    except OSError as e:
        raise ConfigError(f"{path}: cannot be read ({e.strerror})") from None
    except UnicodeDecodeError as e:  # tomllib decodes the whole file before it parses
        line = e.object[:e.start].count(b"\n") + 1
        raise ConfigError(f"{path}: line {line}: not UTF-8 text (byte 0x{e.object[e.start]:02x})") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not TOML: {e}") from None
    found = doc
    for key in ("tool", "tool.vkverify"):
        found = found.get(key.rpartition(".")[2], {})
        if not isinstance(found, dict):
            raise ConfigError(f"{path}: {key}: must be a table, got {_kind(found)}")
    return found


def _kind(value) -> str:
    """A TOML value's type as its spec names it."""
    for t, name in ((bool, "a boolean"), (int, "an integer"), (float, "a float"), (str, "a string"),
                    (list, "an array"), (dict, "a table")):
        if isinstance(value, t):
            return name
    return "a date or time"


def _option(parser: argparse.ArgumentParser, key: str) -> argparse.Action | None:
    action = parser._option_string_actions.get("--" + key.replace("_", "-"))
    return None if isinstance(action, (argparse._HelpAction, argparse._VersionAction)) else action


def _tokens(option: str, action: argparse.Action, value, where: str) -> list[str]:
    """The command-line arguments that say `value` for `action`, checked as argparse would."""
    if action.nargs == 0:  # a flag
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: must be true or false, got {value!r}")
        return [option] if value == action.const else []  # store_true's const is True, store_false's False
    if isinstance(value, list) and isinstance(action, argparse._StoreAction):  # store: the last would win
        raise ConfigError(f"{where}: takes one value, got an array of {len(value)}")
    values = value if isinstance(value, list) else [value]
    out = []
    for v in values:
        if isinstance(v, (bool, dict, list)):
            raise ConfigError(f"{where}: must be a string or number, got {_kind(v)}")
        if action.choices is not None and v not in action.choices:
            raise ConfigError(f"{where}: {v!r} is not one of {', '.join(map(str, action.choices))}")
        try:
            value = action.type(str(v)) if callable(action.type) else str(v)
            action(_Probe(), argparse.Namespace(**{action.dest: None}), value, option)  # an action's own checks
        except (argparse.ArgumentTypeError, ValueError, TypeError) as e:
            raise ConfigError(f"{where}: {e}") from None
        out += [option, str(v)]
    return out


class _Probe(argparse.ArgumentParser):
    """The parser an action reports a bad value to while a default is checked: it raises, naming no option."""

    def error(self, message: str):
        raise ValueError(message.partition(" ")[2] if message.startswith("--") else message)


def arguments(config: dict, command: str, commands: dict[str, argparse.ArgumentParser],
              source: Path) -> list[str]:
    """The arguments `config` ([tool.vkverify]) gives `command`: top-level keys where the command has the
    option, then its own table's."""
    out = []
    for key, value in config.items():
        if key in commands and not isinstance(value, dict):
            raise ConfigError(f"{source}: tool.vkverify.{key}: must be a table, got {_kind(value)}")
        if isinstance(value, dict):
            if key not in commands:
                raise ConfigError(f"{source}: tool.vkverify.{key}: unknown key (not a command: "
                                  f"{', '.join(sorted(commands))})")
            continue
        if not any(_option(p, key) for p in commands.values()):
            raise ConfigError(f"{source}: tool.vkverify.{key}: unknown key (no command has --{key})")
        action = _option(commands[command], key)
        if action is not None:
            out += _tokens("--" + key.replace("_", "-"), action, value, f"{source}: tool.vkverify.{key}")
    for key, value in config.get(command, {}).items():
        action = _option(commands[command], key)
        if action is None:
            raise ConfigError(f"{source}: tool.vkverify.{command}.{key}: unknown key (vkverify {command} has "
                              f"no --{key.replace('_', '-')})")
        out += _tokens("--" + key.replace("_", "-"), action, value, f"{source}: tool.vkverify.{command}.{key}")
    return out
