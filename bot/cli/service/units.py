"""The systemd units `valet service install` writes, and the ones shipped in deploy/: the same
text (tests/e2e/test_service_install.py checks that deploy/valet.service and
deploy/valet@.service are what this renders for /opt/valet/bin/valet).

`valet.service` runs everything in one process (SQLite, or Postgres without Redis);
`valet@.service` is the template for the roles (`valet@web`, `valet@worker`,
`valet@scheduler`) against one Postgres and one Redis. Each is ordered after (`After=`) and
pulls in (`Wants=`) the Postgres and Redis of this machine it uses (bot.cli.service.local:
the URLs name localhost, a loopback address or a socket), so after a reboot Valet starts once
they have; a Valet that starts first anyway waits for its database (bot.db.pending). The
shipped units are those of the usual set-ups: all in one on SQLite (none), the roles on a
local Postgres and Redis (both). Both read /etc/valet/valet.env OVER
their Environment= lines (systemd.exec(5)), so that file never sets what a unit sets
(SET_BY_UNIT): the installer leaves those variables out of it, and `valet service status`
says when a line there throws a unit's value away.
"""

from __future__ import annotations

from dataclasses import dataclass

ETC = "/etc/valet"
STATE = "/var/lib/valet"  # StateDirectory=valet
UNIT_DIR = "/etc/systemd/system"
ALL_IN_ONE = "valet.service"
TEMPLATE = "valet@.service"
DOCUMENTATION = "file:///opt/valet-src/docs/going-live.md"
# What the units set with Environment=: never in valet.env, which systemd reads over them.
SET_BY_UNIT = ("VALET_CONFIG", "VALET_DATA_DIR", "VALET_HTTP_HOST", "VALET_HTTP_PORT")


@dataclass(frozen=True)
class UnitSettings:
    valet: str = "/opt/valet/bin/valet"  # the `valet` the unit runs
    user: str = "valet"
    port: int = 8080  # the all-in-one unit's (a role's port is in ROLE.env)
    # ProtectHome=yes hides /home, /root and /run/user from the service; an install that
    # lives under /home needs it readable: "read-only".
    protect_home: str = "yes"
    # The local servers' units Valet starts after (postgresql.service, redis-server.service);
    # None: the shipped unit's (none for all in one, both for the roles' template).
    local_servers: tuple[str, ...] | None = None


_HARDENING = """NoNewPrivileges=yes
ProtectSystem=strict
ProtectHome={protect_home}
PrivateTmp=yes
PrivateDevices=yes
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectClock=yes
ProtectHostname=yes
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6
RestrictNamespaces=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes
LockPersonality=yes
SystemCallArchitectures=native
CapabilityBoundingSet=
"""

_ALL_IN_ONE = """[Unit]
Description=Valet personal assistant (all in one)
Documentation={documentation}
After=network-online.target{servers}
Wants=network-online.target{servers}

[Service]
Type=exec
User={user}
Group={user}
ExecStart={valet} serve
EnvironmentFile={etc}/valet.env
Environment=VALET_CONFIG={etc}/valet.yaml
Environment=VALET_DATA_DIR={state}
Environment=VALET_HTTP_HOST=127.0.0.1
Environment=VALET_HTTP_PORT={port}
# {state}: the SQLite database, the log file (`valet logs`); created and owned by
# systemd for the service user, the only place it may write.
StateDirectory=valet
StateDirectoryMode=0700
WorkingDirectory={state}
UMask=0077

# On SIGTERM Valet stops taking messages and gives running turns
# http.shutdown_grace_seconds (20 by default) to finish; systemd waits 10 s longer before it
# kills. Raise both together.
KillSignal=SIGTERM
TimeoutStopSec=30
Restart=on-failure
RestartSec=5

# Hardening: nothing but its state directory is writable; no privileges, no devices.
{hardening}
[Install]
WantedBy=multi-user.target
"""

_TEMPLATE = """[Unit]
Description=Valet personal assistant (%i)
Documentation={documentation}
After=network-online.target{servers}
Wants=network-online.target{servers}

[Service]
Type=exec
User={user}
Group={user}
ExecStart={valet} serve --role %i
EnvironmentFile={etc}/valet.env
EnvironmentFile=-{etc}/%i.env
Environment=VALET_CONFIG={etc}/valet.yaml
Environment=VALET_DATA_DIR={state}
Environment=VALET_HTTP_HOST=127.0.0.1
StateDirectory=valet
StateDirectoryMode=0700
WorkingDirectory={state}
UMask=0077

# SIGTERM drain: http.shutdown_grace_seconds (20 by default) + 10 s; raise both together.
KillSignal=SIGTERM
TimeoutStopSec=30
Restart=on-failure
RestartSec=5

{hardening}
[Install]
WantedBy=multi-user.target
"""


POSTGRES_UNIT = "postgresql.service"
REDIS_UNIT = "redis-server.service"


def command_path(path: str) -> str:
    """A program's path as ExecStart= reads it: systemd splits the line at spaces (quotes keep
    one word) and expands `%` (doubled, it is itself)."""
    path = path.replace("%", "%%")
    return f'"{path}"' if any(c.isspace() for c in path) else path


def _render(template: str, unit: UnitSettings, servers: tuple[str, ...]) -> str:
    return template.format(
        documentation=DOCUMENTATION, user=unit.user, valet=command_path(unit.valet), etc=ETC,
        state=STATE, port=unit.port, hardening=_HARDENING.format(protect_home=unit.protect_home),
        servers="".join(f" {name}" for name in servers))


def all_in_one(unit: UnitSettings) -> str:
    servers = () if unit.local_servers is None else unit.local_servers
    return _render(_ALL_IN_ONE, unit, servers)


def template(unit: UnitSettings) -> str:
    servers = (POSTGRES_UNIT, REDIS_UNIT) if unit.local_servers is None else unit.local_servers
    return _render(_TEMPLATE, unit, servers)


def role_env(port: int) -> str:
    """/etc/valet/ROLE.env: what differs by role on one machine (read after valet.env)."""
    return ("# This role's own port: its health checks and /metrics (read after valet.env).\n"
            f"VALET_HTTP_PORT={port}\n")
