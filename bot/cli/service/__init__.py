"""`valet service install|uninstall|status`: Valet as a systemd service, from the install it
runs in (docs/going-live.md, set-up 1; the steps by hand stay there as the reference).

`install` writes the unit for this install (all in one on SQLite; the role template and
its web, worker and scheduler instances on Postgres with Redis), /etc/valet/valet.yaml (the
configuration in use, 0640 root:valet), /etc/valet/valet.env (this environment's settings
and secrets, 0600 root: systemd reads it as root), creates the service user when missing,
applies the migrations roles need, enables and starts the units and says each thing it
does. `--dry-run` prints the files and the commands instead. `--root DIR` installs into
another root (an image, a chroot) as `systemctl --root` does: nothing is started."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path

from bot.config import ConfigError, Settings

Say = Callable[[str], None]


def add_service_commands(sub: argparse._SubParsersAction) -> None:
    service = sub.add_parser("service", help="Valet as a systemd service: install (the unit, "
                             "/etc/valet, enabled and started), uninstall, status")
    actions = service.add_subparsers(dest="action", required=True)
    install = actions.add_parser("install", help="write the unit for this install and the "
                                 "settings in /etc/valet, then enable and start it")
    install.add_argument("--dry-run", action="store_true",
                         help="print the files and the commands; change nothing")
    install.add_argument("--role", action="append", choices=["all", "web", "worker",
                                                             "scheduler"],
                         help="which roles (Postgres and Redis; default: all three when "
                              "both are configured, else everything in one process)")
    install.add_argument("--user", default="valet",
                         help="the service user (default valet; created when missing)")
    for action in (install, actions.add_parser("uninstall", help="stop, disable and remove "
                                               "the units (settings and data stay)"),
                   actions.add_parser("status", help="the units, the files in /etc/valet, "
                                      "and what is wrong with them")):
        action.add_argument("--root", default="/", help="another root directory (an image "
                            "being built), as `systemctl --root`: nothing is started")


async def run_service(settings: Settings, args: argparse.Namespace,
                      say: Say = print) -> int:
    from bot.cli.service.status import status, uninstall

    root = _root_of(args)
    if args.action == "status":
        return status(root, say)
    if not getattr(args, "dry_run", False) and os.geteuid() != 0:
        raise ConfigError(f"valet service {args.action} writes root's files (/etc/valet, the "
                          "units) and runs systemctl: run it with sudo (--dry-run shows what "
                          "it would do)")
    if args.action == "uninstall":
        return uninstall(root, say)
    return await _install(settings, args, root, say)


def _root_of(args: argparse.Namespace) -> Path:
    return Path(os.path.abspath(args.root))


async def _install(settings: Settings, args: argparse.Namespace, root: Path, say: Say) -> int:
    from bot.cli.service.apply import install, show
    from bot.cli.service.plan import plan_install

    plan = plan_install(settings, os.environ, user=args.user, roles=args.role)
    if args.dry_run:
        show(plan, root, say)
        return 0
    applied: list[str] = []
    if plan.migrate:
        applied = await _migrate(settings)
    return install(plan, root, say, lambda: applied)


async def _migrate(settings: Settings) -> list[str]:
    """Roles never migrate themselves: `valet migrate` first, once."""
    from bot.app.database import MIGRATIONS, open_database
    from bot.db.migrate import apply_migrations, refuse_newer, schema_state
    from bot.text.redact import redact_url

    db = await open_database(settings.database_url, migrate=False)
    try:
        refuse_newer(await schema_state(db, MIGRATIONS), redact_url(settings.database_url),
                     MIGRATIONS)
        return list(await apply_migrations(db, MIGRATIONS))
    finally:
        await db.close()
