"""Every channel Valet has, in one list: each channel's spec (channels/<name>/spec.py) is a
line of `BUILT_IN`; a deployment (or a test) adds its own with valet.yaml's
`channel_modules:` (a module whose `SPEC` is a ChannelSpec; docs/extending.md, "Adding a
channel"). What deals with channels (bot/app, bot/cli) goes through `specs(settings)`; the
core is handed their traits (bot.contracts.channels) and names none."""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from bot.config import ConfigError, Settings, load_settings
from bot.config.channel_settings import ChannelSection
from bot.contracts.channels import ChannelTraits
from channels.console.spec import SPEC as CONSOLE
from channels.sms.spec import SPEC as SMS
from channels.spec import ChannelSpec, Env
from channels.telegram.spec import SPEC as TELEGRAM
from channels.whatsapp.spec import SPEC as WHATSAPP
from persona.line_group import LineGroup

# In this order doctor checks them, onboard asks about them and `valet serve` starts them.
BUILT_IN: tuple[ChannelSpec, ...] = (CONSOLE, TELEGRAM, SMS, WHATSAPP)

# The packages whose migrations make channels' tables, in the order they are applied (after
# the core's: bot.app.database). A channel added from valet.yaml keeps no tables of its own.
MIGRATIONS = tuple(spec.migrations for spec in BUILT_IN if spec.migrations)


@dataclass(frozen=True)
class Specs:
    """The channels of a deployment: the built-in ones, then those valet.yaml adds."""

    all: tuple[ChannelSpec, ...]

    def __len__(self) -> int:
        return len(self.all)

    def __iter__(self) -> Iterator[ChannelSpec]:
        return iter(self.all)

    def named(self, name: str) -> ChannelSpec | None:
        return next((s for s in self.all if s.name == name), None)

    def names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.all)

    def traits(self) -> tuple[ChannelTraits, ...]:
        return tuple(s.traits for s in self.all)

    def line_groups(self) -> tuple[type[LineGroup], ...]:
        """The channels' own groups of lines, which a persona may reword (load_persona)."""
        return tuple(s.lines for s in self.all if s.lines is not None)

    def configured(self, settings: Settings, env: Env) -> list[ChannelSpec]:
        """Those this deployment turns on."""
        return [s for s in self.all if s.configured(settings, env)]


def specs(settings: Settings | None = None) -> Specs:
    """The built-in channels, then those `channel_modules:` names (ConfigError: a module that
    cannot be imported, has no ChannelSpec called SPEC, or takes a name already used)."""
    return _with_modules(settings.channel_modules if settings is not None else [])


def channel_sections(modules: Sequence[str]) -> list[ChannelSection[Any]]:
    """The sections of valet.yaml the channels own (bot.config.channel_settings), those of
    the modules `channel_modules:` names included."""
    return [spec.section for spec in _with_modules(modules) if spec.section is not None]


def load_channel_settings(cli_path: str | None = None, env: dict[str, str] | None = None, *,
                          missing_ok: bool = False) -> Settings:
    """valet.yaml and the environment, with every channel's own section: what a command
    runs on (bot.config.load_settings, handed the channels' sections)."""
    return load_settings(cli_path, env, missing_ok=missing_ok, channels=channel_sections)


def _with_modules(modules: Sequence[str]) -> Specs:
    found = list(BUILT_IN)
    for module in modules:
        spec = _spec_in(module)
        if any(s.name == spec.name for s in found):
            raise ConfigError(f"channel_modules: {module}: a channel named {spec.name!r} "
                              "exists already")
        found.append(spec)
    return Specs(tuple(found))


def _spec_in(module: str) -> ChannelSpec:
    try:
        loaded = importlib.import_module(module)
    except ImportError as err:
        raise ConfigError(f"channel_modules: {module}: cannot be imported ({err})") from err
    spec = getattr(loaded, "SPEC", None)
    if not isinstance(spec, ChannelSpec):
        raise ConfigError(f"channel_modules: {module}: has no SPEC (a channels.spec."
                          "ChannelSpec)")
    return spec
