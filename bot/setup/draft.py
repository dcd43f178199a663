"""What `valet onboard` has gathered, and writing it: valet.yaml (edited in place, comments
kept) and the env file (secrets, 0600)."""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.config.env_file import read_env_file, write_env_file
from bot.config.yaml_edit import add_to_list, edit_config
from bot.credentials import KEY_ENV, new_key

EVENTS_TOKEN_ENV = "VALET_EVENTS_TOKEN"
# Done once the public address is known (a channel's webhook pointed at it): given the URL.
AtPublicUrl = Callable[[str], Awaitable[None]]


@dataclass
class Draft:
    config: dict[tuple[str, ...], Any] = field(default_factory=dict)  # None: remove the key
    env: dict[str, str | None] = field(default_factory=dict)  # None: remove the line
    # The owner's addresses found, by their key under `owner:` (a channel's spec names its
    # own: telegram_ids, phone_numbers): added to the lists in valet.yaml.
    owner: dict[str, list[str]] = field(default_factory=dict)
    # Secrets a step needs generated when the environment has none (a webhook's secret).
    secrets: list[str] = field(default_factory=list)
    next_steps: list[str] = field(default_factory=list)  # printed at the end
    owner_name_hint: str | None = None  # the name the owner gave a service (their /start)
    # What a step does once the public address is known (the public address step runs them).
    at_public_url: list[AtPublicUrl] = field(default_factory=list)

    def has_changes(self) -> bool:
        """Anything to write (a step that was confirmed)."""
        return bool(self.config or self.env or any(self.owner.values()))

    def add_owner(self, key: str, address: str) -> None:
        self.owner.setdefault(key, []).append(address)

    def generate_secrets(self, env: Mapping[str, str]) -> list[str]:
        """The secrets Valet needs that do not exist yet; the names generated."""
        wanted = {KEY_ENV: new_key, EVENTS_TOKEN_ENV: lambda: secrets.token_hex(32)}
        for name in self.secrets:
            wanted[name] = lambda: secrets.token_urlsafe(32)
        made = []
        for name, make in wanted.items():
            current = env.get(name) or self.env.get(name)
            if current:
                self.env.setdefault(name, current)  # kept, and written to the env file
                continue
            self.env[name] = make()
            made.append(name)
        return made

    def write(self, config: Path, env_file: Path) -> None:
        config.parent.mkdir(parents=True, exist_ok=True)
        env_file.parent.mkdir(parents=True, exist_ok=True)
        edit_config(config, self.config)
        for key, addresses in self.owner.items():
            for address in addresses:
                add_to_list(config, ("owner", key), address)
        write_env_file(env_file, self.env)


def env_after(draft: Draft, env_file: Path, environ: Mapping[str, str]
              ) -> tuple[dict[str, str], list[str]]:
    """The environment `valet` will have with the new env file, and the variables the shell
    sets itself (those win over the file: the operator is told). Call before writing."""
    before = read_env_file(env_file) if env_file.exists() else {}
    result = dict(environ)
    shadowed = []
    for name, value in draft.env.items():
        from_shell = name in environ and environ[name] != before.get(name)
        if from_shell and value is not None and environ[name] != value:
            shadowed.append(name)
            continue
        if value is None:
            result.pop(name, None)
        elif not from_shell:
            result[name] = value
    return result, shadowed
