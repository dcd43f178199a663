"""What `valet service install` writes for the install it runs from: the unit (all in one on
SQLite, or on Postgres without Redis; the role template with web, worker and scheduler on
Postgres with Redis), /etc/valet/valet.yaml (the configuration in use), /etc/valet/valet.env
(the settings and secrets of this environment, less what the unit sets), and a role's own
port file. Each file with its mode and owner; nothing is written here (service.apply)."""

from __future__ import annotations

import os
import shutil
import stat
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from bot.app.roles import PARTS, SCHEDULER, WEB, WORKER
from bot.cli.service import units
from bot.cli.service.local import local_servers
from bot.cli.service.units import ETC, SET_BY_UNIT, UNIT_DIR, UnitSettings
from bot.cli.service.users import group_of
from bot.config import ConfigError, Settings
from bot.plumbing.logs import secret_values

ENV_PREFIXES = ("VALET_", "OPENAI_")
# An install under these is hidden by ProtectHome=yes: the unit makes them read-only instead.
HOMES = ("/home/", "/root/", "/run/user/")


@dataclass(frozen=True)
class File:
    path: str  # where on the machine (under --root when given)
    text: str
    mode: int
    owner: str  # "root", or the service user
    group: str
    secret_values: tuple[str, ...] = ()  # masked when the file is shown (--dry-run)


@dataclass
class Plan:
    files: list[File] = field(default_factory=list)
    units: list[str] = field(default_factory=list)  # what is enabled and started
    migrate: bool = False  # roles: `valet migrate` before they start (all in one migrates)
    notes: list[str] = field(default_factory=list)  # said before anything is done
    user: str = "valet"


def plan_install(settings: Settings, env: Mapping[str, str], *, user: str,
                 roles: list[str] | None) -> Plan:
    """ConfigError (one line) when this install cannot be made a service as it is."""
    valet = installed_valet()
    plan = Plan(user=user)
    unit = UnitSettings(valet=valet, user=user, port=settings.http.port,
                        protect_home="read-only" if valet.startswith(HOMES) else "yes",
                        local_servers=local_servers(settings))
    if unit.protect_home != "yes":
        plan.notes.append(f"{valet} is under a home directory: the unit reads homes "
                          "(ProtectHome=read-only); /opt/valet keeps them hidden")
    chosen = _roles(settings, roles)
    if chosen == ["all"]:
        plan.files.append(File(f"{UNIT_DIR}/{units.ALL_IN_ONE}", units.all_in_one(unit),
                               0o644, "root", "root"))
        plan.units = [units.ALL_IN_ONE]
    else:
        plan.files.append(File(f"{UNIT_DIR}/{units.TEMPLATE}", units.template(unit), 0o644,
                               "root", "root"))
        ports = {WEB: settings.http.port, WORKER: settings.http.port + 1,
                 SCHEDULER: settings.http.port + 2}
        plan.files += [File(f"{ETC}/{role}.env", units.role_env(ports[role]), 0o644, "root",
                            "root") for role in chosen]
        plan.units = [f"valet@{role}.service" for role in chosen]
        plan.migrate = True
    plan.files.insert(0, _config_file(settings, user))
    plan.files.insert(1, _env_file(settings, env, plan))
    return plan


def installed_valet() -> str:
    """The `valet` command of this install (beside the Python running it), reachable by the
    service user; ConfigError otherwise."""
    found = shutil.which("valet", path=str(Path(sys.executable).parent))
    if found is None:
        raise ConfigError(f"no `valet` command beside {sys.executable}: install Valet into a "
                          "virtual environment (python3 -m venv /opt/valet && /opt/valet/bin/"
                          "pip install .) and run its valet")
    path = Path(os.path.abspath(found))
    for part in [*reversed(path.parents), path]:  # each directory searched, the file run
        mode = part.stat().st_mode
        if not mode & stat.S_IXOTH:
            raise ConfigError(f"{part} is not open to other users (mode "
                              f"{stat.S_IMODE(mode):04o}): the service user cannot run "
                              f"{path}; install Valet where every user may read it, such as "
                              "/opt/valet")
    return str(path)


def _roles(settings: Settings, asked: list[str] | None) -> list[str]:
    sqlite = settings.database_url.startswith("sqlite")
    if asked and "all" not in asked:
        if sqlite or not settings.redis_url:
            raise ConfigError("--role needs Postgres and Redis (VALET_DATABASE_URL, "
                              "VALET_REDIS_URL): one SQLite process runs every role")
        return [role for role in PARTS if role in asked]
    if asked or sqlite or not settings.redis_url:
        return ["all"]
    return list(PARTS)


def _config_file(settings: Settings, user: str) -> File:
    """The valet.yaml in use, as it is: not secret, but personal (phone numbers, ids), so
    readable by root and the service's group only."""
    if settings.source == "<defaults>":
        text = "# Valet's settings that are not secret (docs/configuration.md).\n"
    else:
        text = Path(settings.source).read_text(encoding="utf-8")
    return File(f"{ETC}/valet.yaml", text, 0o640, "root", group_of(user))


def _env_file(settings: Settings, env: Mapping[str, str], plan: Plan) -> File:
    """Every VALET_/OPENAI_ variable set here, less what the unit sets (systemd reads this
    file over the unit's Environment=) and a SQLite file elsewhere than the service's state
    directory (it cannot write anywhere else)."""
    values: dict[str, str] = {}
    for name in sorted(env):
        value = env[name]
        if not name.startswith(ENV_PREFIXES) or not value or name in SET_BY_UNIT:
            continue
        if name == "VALET_DATABASE_URL" and value.startswith("sqlite"):
            plan.notes.append(f"the database {value} stays where it is: the service keeps "
                              f"its own in {units.STATE} (to take your conversations along, "
                              f"`valet backup {units.STATE}/valet.db` before it first starts)")
            continue
        values[name] = value
    left_out = [name for name in SET_BY_UNIT if env.get(name)]
    if left_out:
        plan.notes.append(f"{', '.join(left_out)}: set by the unit, not in valet.env")
    lines = ["# Valet's settings and secrets for its systemd unit (valet service install).",
             "# Read by systemd as root, OVER the unit's Environment= lines: never add",
             f"# {', '.join(SET_BY_UNIT)} here.",
             *(f"{name}={_quoted(value)}" for name, value in values.items())]
    secrets = tuple(secret_values({n: v for n, v in values.items()}))
    return File(f"{ETC}/valet.env", "\n".join(lines) + "\n", 0o600, "root", "root", secrets)


def _quoted(value: str) -> str:
    """A value as systemd's EnvironmentFile= and Valet's env file both read it back."""
    if "\n" in value:
        raise ConfigError("a setting's value spans lines; an env file cannot hold it")
    if all(c.isalnum() or c in "_-:./+=,@%" for c in value):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
