"""Secrets from files: `VALET_X_FILE=/path` sets `VALET_X` to the file's content, as Docker
secrets (/run/secrets/...) and systemd credentials ($CREDENTIALS_DIRECTORY, `%d` in a unit)
provide them. Resolved once, at the start of every command, before anything reads the
environment; the secret then lives only in this process's environment, never in a file of
Valet's own or in a log line."""

from __future__ import annotations

from collections.abc import MutableMapping

from bot.config.problems import ConfigError

SUFFIX = "_FILE"
PREFIXES = ("VALET_", "OPENAI_")


def load_secret_files(env: MutableMapping[str, str]) -> list[str]:
    """Resolve every VALET_*_FILE / OPENAI_*_FILE variable; returns the names set. One clear
    line (ConfigError) for a file that cannot be read or a variable given both ways. An empty
    file means "not set", as an empty variable does: a compose file lists every secret Valet
    can use, and the ones a deployment does not use are empty files."""
    resolved = []
    for name in sorted(env):
        if not (name.startswith(PREFIXES) and name.endswith(SUFFIX)):
            continue
        target = name.removesuffix(SUFFIX)
        path = env[name]
        try:
            with open(path, encoding="utf-8") as fh:
                value = fh.read().rstrip("\r\n")
        except OSError as err:
            raise ConfigError(f"environment {name}: cannot read {path}: "
                              f"{err.strerror or err}") from err
        del env[name]  # resolved: a second pass (or a child process) sees only the value
        if not value:
            continue
        if env.get(target):
            raise ConfigError(f"environment: both {target} and {name} are set; keep one")
        env[target] = value
        resolved.append(target)
    return resolved
