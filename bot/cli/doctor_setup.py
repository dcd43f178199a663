"""`valet doctor`'s checks of the deployment's set-up: the data directory, the secrets Valet
generates (VALET_SECRET_KEY, the events token), the public URL and the owner. With `--fix`,
the safe repairs are made and said (the data directory created). Each channel checks itself
(channels/<name>/doctor.py)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from bot.config import Settings
from bot.credentials import KEY_ENV, parse_keys
from bot.db import Database
from bot.plumbing.private import private_dir
from bot.setup.report import Report
from channels.registry import specs

EVENTS_TOKEN_ENV = "VALET_EVENTS_TOKEN"
MIN_TOKEN_CHARS = 16  # a bearer token shorter than this can be guessed


def check_data_directory(settings: Settings, report: Report) -> None:
    where = settings.data_dir()
    if where.is_dir():
        if os.access(where, os.W_OK | os.X_OK):
            report.ok(f"data directory {where}")
        else:
            report.bad(f"data directory {where} is not writable by this user: fix its owner "
                       "or set VALET_DATA_DIR")
        return
    if where.exists():
        report.bad(f"data directory {where} is a file, not a directory: move it or set "
                   "VALET_DATA_DIR")
        return
    if report.fix:
        try:
            private_dir(where)
        except OSError as err:
            report.bad(f"data directory {where} cannot be created: {err.strerror}; set "
                       "VALET_DATA_DIR to a writable directory")
            return
        report.did(f"created the data directory {where}")
        return
    parent = next((p for p in where.parents if p.exists()), Path("/"))
    if os.access(parent, os.W_OK | os.X_OK):
        report.note(f"data directory {where} does not exist yet (created at first start; "
                    "--fix creates it now)")
    else:
        report.bad(f"data directory {where} cannot be created ({parent} is not writable): "
                   "set VALET_DATA_DIR to a writable directory")


async def check_secret_key(env: Mapping[str, str], db: Database | None,
                           report: Report) -> None:
    try:
        keys = parse_keys(env.get(KEY_ENV))
    except Exception as err:
        report.bad(str(err))
        return
    if keys is not None:
        report.ok(f"{KEY_ENV} set (stored credentials are encrypted with it)")
        return
    stored = 0
    if db is not None:
        stored = int(await db.fetchval("SELECT COUNT(*) FROM credentials") or 0)
    if stored:
        report.bad(f"{KEY_ENV} is not set but {stored} credential(s) are stored: set the key "
                   "they were stored with")
    else:
        report.off(f"{KEY_ENV} not set: calendars and mail cannot be connected (valet onboard "
                   "generates one; or `valet credentials new-key`)")


def check_events_token(env: Mapping[str, str], report: Report) -> None:
    token = env.get(EVENTS_TOKEN_ENV) or ""
    if not token:
        report.off(f"POST /events: set {EVENTS_TOKEN_ENV} to let other programs send events "
                   "(valet onboard generates one)")
    elif len(token) < MIN_TOKEN_CHARS:
        report.bad(f"{EVENTS_TOKEN_ENV} is {len(token)} characters: use at least "
                   f"{MIN_TOKEN_CHARS} random ones (openssl rand -hex 32)")
    else:
        report.ok(f"{EVENTS_TOKEN_ENV} set (POST /events)")


def check_public_url(settings: Settings, env: Mapping[str, str], report: Report) -> None:
    """A public https address is needed by the channels that are sent webhooks (SMS,
    Telegram's webhook mode)."""
    needs = [need for spec in specs(settings)
             if (need := spec.public_url_for(settings, env))]
    url = settings.public_url
    if url:
        report.ok(f"public URL {url}")
    elif needs:
        report.bad(f"{' and '.join(needs)} need(s) a public https address: set "
                   "VALET_PUBLIC_URL (or public_url) to where this server is reached, e.g. "
                   "https://valet.example.com")


async def check_owner(settings: Settings, db: Database | None, report: Report) -> None:
    owned = [spec for spec in specs(settings) if spec.owner_key]
    # Each address valet.yaml lists, once (a phone number is the owner on SMS and WhatsApp).
    configured = list(dict.fromkeys(a for spec in owned for a in spec.owners(settings)))
    linked = 0
    if db is not None:
        linked = int(await db.fetchval(
            "SELECT COUNT(*) FROM identities i JOIN users u ON u.id = i.user_id"
            " WHERE u.is_owner = 1 AND i.channel <> 'console'") or 0)
    if configured or linked:
        report.ok(f"owner {settings.owner.name!r}: {len(configured) or linked} address(es)")
    else:
        report.note("no owner address yet: valet serve prints a one-time claim code (send it "
                    "to the bot to become the owner), or set "
                    + " / ".join(dict.fromkeys(f"owner.{spec.owner_key} ({spec.address})"
                                               for spec in owned)))


