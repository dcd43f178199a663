"""A channel's own section of valet.yaml, declared in its package (`ChannelSection`): its key
("whatsapp:"), its model, the environment variables that set its keys. The core names no
channel: the loader is handed the sections of the channels there are (channels.registry feeds
it, the built-in ones and those `channel_modules:` adds), checks each as it checks its own,
and the settings keep them for the channel to read back (`SECTION.of(settings)`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from bot.config.sections import Section

if TYPE_CHECKING:
    from bot.config.settings import Settings

S = TypeVar("S", bound=Section)


@dataclass(frozen=True)
class ChannelSection(Generic[S]):
    key: str  # its top-level key in valet.yaml
    model: type[S]  # checked as every section is: an unknown key is a mistake
    # Environment variable -> the key it sets inside the section (VALET_WHATSAPP_FROM_NUMBER
    # -> ("from_number",)); the environment wins over the file, as for the core's.
    env: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def of(self, settings: Settings) -> S:
        """The section as loaded; its defaults when the settings were made without it (a test's
        `Settings()`, a valet.yaml that does not mention it)."""
        found = settings.channel_section(self.key)
        if found is None:
            return self.model()
        if not isinstance(found, self.model):
            raise TypeError(f"{self.key}: holds a {type(found).__name__}, not a "
                            f"{self.model.__name__}")
        return found

    def into(self, settings: Settings, section: S) -> Settings:
        """A copy of `settings` holding `section` (a caller that builds settings itself)."""
        return settings.with_channel_section(self.key, section)


# The sections of the channels a deployment has, given the modules valet.yaml's
# `channel_modules:` names (read before the rest is checked: those modules may bring their
# own sections). ConfigError: a module that cannot be used (said at `channel_modules`).
ChannelSections = Callable[[Sequence[str]], Sequence[ChannelSection[Any]]]
