"""Reading deploy/ as the tests need it: the Dockerfile's runtime ENV, CMD and HEALTHCHECK,
the compose services' commands and environment, and .env.example's variables."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|API_KEY|SECRET_KEY")


@dataclass
class Dockerfile:
    stages: list[list[tuple[str, str]]] = field(default_factory=list)  # (INSTRUCTION, args)

    @classmethod
    def read(cls, path: Path = DEPLOY / "Dockerfile") -> Dockerfile:
        joined = re.sub(r"\\\n", " ", path.read_text())
        parsed = cls()
        for line in joined.splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            word, _, rest = line.partition(" ")
            if word.upper() == "FROM":
                parsed.stages.append([])
            parsed.stages[-1].append((word.upper(), rest.strip()))
        return parsed

    def runtime(self, instruction: str) -> list[str]:
        return [args for word, args in self.stages[-1] if word == instruction]

    def env(self) -> dict[str, str]:
        values: dict[str, str] = {}
        for args in self.runtime("ENV"):
            for pair in shlex.split(args):
                key, _, value = pair.partition("=")
                values[key] = value
        return values

    def cmd(self) -> list[str]:
        [cmd] = self.runtime("CMD")
        return list(json.loads(cmd))

    def healthcheck(self) -> list[str]:
        [check] = self.runtime("HEALTHCHECK")
        return list(json.loads(check[check.index("CMD") + 3:].strip()))


def compose(path: Path = DEPLOY / "docker-compose.yml") -> dict[str, Any]:
    return dict(yaml.safe_load(path.read_text()))  # anchors and << merges resolved


def interpolate(value: str, variables: dict[str, str]) -> str:
    """Compose's ${NAME}, ${NAME:?message} and ${NAME:-default}."""

    def one(match: re.Match[str]) -> str:
        name, op, rest = match.group(1), match.group(2), match.group(3)
        found = variables.get(name, "")
        if op == ":?" and not found:
            raise AssertionError(f"{name} must be set: {rest}")
        return found or (rest if op == ":-" else "")

    return re.sub(r"\$\{([A-Z0-9_]+)(?:(:\?|:-)([^}]*))?\}", one, value)


def env_example(path: Path = DEPLOY / ".env.example") -> tuple[dict[str, str], dict[str, str]]:
    """(variables and their values, the comment line right above each)."""
    values: dict[str, str] = {}
    comments: dict[str, str] = {}
    previous = ""
    for line in path.read_text().splitlines():
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            values[key] = value
            comments[key] = previous if previous.startswith("# ") else ""
        previous = line
    return values, comments


def env_example_set_elsewhere(path: Path = DEPLOY / ".env.example") -> dict[str, str]:
    """The variables .env.example leaves out on purpose (`#NAME=` lines: the units and compose
    set them), each with the comment line right above it."""
    found: dict[str, str] = {}
    previous = ""
    for line in path.read_text().splitlines():
        match = re.fullmatch(r"#([A-Z][A-Z0-9_]*)=.*", line)
        if match:
            found[match.group(1)] = previous if previous.startswith("# ") else ""
        previous = line
    return found


# --- the environment a process gets, built as systemd and compose build it ------------------


def unit_lines(text: str, section: str = "Service") -> list[tuple[str, str]]:
    """A unit file's `Key=value` lines of one section, in order (continuations joined)."""
    joined = re.sub(r"\\\n", " ", text)
    current, lines = "", []
    for raw in joined.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            current = line.strip("[]")
            continue
        key, _, value = line.partition("=")
        if current == section:
            lines.append((key.strip(), value.strip()))
    return lines


def _specifiers(value: str, instance: str) -> str:
    return value.replace("%%", "\0").replace("%i", instance).replace("\0", "%")


def environment_file(text: str) -> dict[str, str]:
    """An EnvironmentFile= (systemd.exec(5)): KEY=VALUE lines, # and ; comments, quotes; an
    empty value SETS the variable to "" (which is the whole point of this module)."""
    values: dict[str, str] = {}
    for raw in re.sub(r"\\\n", "", text).splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")) or "=" not in line:
            continue
        key, _, value = line.partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[key.strip()] = value
    return values


def systemd_environment(unit: str, instance: str, files: dict[str, str]) -> dict[str, str]:
    """What a service's process gets from its unit (systemd.exec(5)): every Environment=
    assignment in order, then every EnvironmentFile= in order, read OVER them ("settings
    from these files override settings made with Environment="; a later file overrides an
    earlier one). `files`: path -> content; a missing path prefixed with "-" is skipped, a
    missing one without it fails the unit."""
    env: dict[str, str] = {}
    settings = unit_lines(unit)
    for key, value in settings:
        if key == "Environment":
            for assignment in shlex.split(_specifiers(value, instance)):
                name, _, val = assignment.partition("=")
                env[name] = val
    for key, value in settings:
        if key != "EnvironmentFile":
            continue
        optional = value.startswith("-")
        path = _specifiers(value.removeprefix("-"), instance)
        if path not in files:
            assert optional, f"{path} is required by the unit and missing"
            continue
        env.update(environment_file(files[path]))
    return env


def compose_environment(service: dict[str, Any], image_env: dict[str, str], dotenv: str,
                        interpolate_from: dict[str, str]) -> dict[str, str]:
    """What a compose service's container gets, in compose's order of precedence: the image's
    ENV, then `env_file` (every line, an empty value included: set to ""), then the service's
    `environment:` (interpolated from .env). Paths are the container's."""
    env = dict(image_env)
    if service.get("env_file"):
        env.update(environment_file(dotenv))
    for key, value in (service.get("environment") or {}).items():
        env[key] = interpolate(str(value), interpolate_from)
    return env
