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
