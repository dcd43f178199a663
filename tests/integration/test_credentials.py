"""Credentials at rest: encrypted (the password is not in the database file), readable after a
key rotation, never readable without the key (one clear line), set from the shell only after
the connection worked."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.cli.connect import Prompts, run_connect
from bot.config import ConfigError
from bot.credentials import CredentialsLocked, CredentialStore, new_key, parse_keys
from bot.db import Database
from bot.people.users import UserStore
from tests.fakes.radicale_server import PASSWORD, USER, radicale

AT = datetime(2026, 1, 5, 9, tzinfo=UTC)
SECRET = {"kind": "caldav", "url": "https://dav.example/", "username": "ana",
          "password": "hunter2-very-secret"}


async def alice(db: Database) -> str:
    await UserStore(db).ensure("alice", at=AT)
    return "alice"


async def test_a_password_is_stored_encrypted_and_read_back(db: Database, db_url: str):
    me = await alice(db)
    store = CredentialStore(db, parse_keys(new_key()))
    await store.put(me, "calendar", SECRET, AT)
    assert await store.get(me, "calendar") == SECRET
    raw = await db.fetchval("SELECT secret FROM credentials WHERE user_id = $1", me)
    assert "hunter2" not in raw and "dav.example" not in raw
    if db_url.startswith("sqlite:///"):  # not in the file either (nor its journal)
        folder = Path(db_url.removeprefix("sqlite:///")).parent
        for path in folder.glob("t.db*"):
            assert b"hunter2" not in path.read_bytes(), path


async def test_rotation_reencrypts_with_the_new_key_and_the_old_key_can_go(db: Database):
    me = await alice(db)
    old, new = new_key(), new_key()
    await CredentialStore(db, parse_keys(old)).put(me, "calendar", SECRET, AT)
    both = CredentialStore(db, parse_keys(f"{new},{old}"))
    assert await both.get(me, "calendar") == SECRET  # every key decrypts
    assert await both.rotate() == 1
    only_new = CredentialStore(db, parse_keys(new))
    assert await only_new.get(me, "calendar") == SECRET
    with pytest.raises(CredentialsLocked):
        await CredentialStore(db, parse_keys(old)).get(me, "calendar")


async def test_without_the_key_stored_credentials_fail_closed_with_one_line(db: Database):
    me = await alice(db)
    await CredentialStore(db, parse_keys(new_key())).put(me, "calendar", SECRET, AT)
    with pytest.raises(CredentialsLocked) as no_key:
        await CredentialStore(db, None).get(me, "calendar")
    assert str(no_key.value) == ("stored credentials cannot be read: VALET_SECRET_KEY is not "
                                 "set (generate one with `valet credentials new-key`)")
    with pytest.raises(CredentialsLocked, match="no key in VALET_SECRET_KEY opens them"):
        await CredentialStore(db, parse_keys(new_key())).get(me, "calendar")
    with pytest.raises(CredentialsLocked):
        await CredentialStore(db, None).put(me, "email", SECRET, AT)
    assert await CredentialStore(db, None).get(me, "email") is None  # none stored: no error


def test_a_malformed_key_is_one_line_without_the_key():
    with pytest.raises(ConfigError) as err:
        parse_keys("not-a-fernet-key")
    assert "key 1 of 1 is not a Fernet key" in str(err.value)
    assert "not-a-fernet-key" not in str(err.value) and "\n" not in str(err.value)


def connect_args(**extra) -> argparse.Namespace:
    return argparse.Namespace(command="connect", service="calendar", user="owner",
                              calendar="", **extra)


def answers(*typed: str, password: str) -> Prompts:
    queue = list(typed)
    asked_secret: list[str] = []

    def secret(prompt: str) -> str:
        asked_secret.append(prompt)
        return password

    return Prompts(ask=lambda prompt: queue.pop(0), secret=secret)


@pytest.mark.slow
async def test_valet_connect_calendar_tests_the_login_before_storing(
        app_settings, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("VALET_SECRET_KEY", new_key())
    settings = app_settings()
    said: list[str] = []
    async with radicale(tmp_path) as url:
        wrong = await run_connect(settings, connect_args(), said.append,
                                  answers(url, USER, password="wrong"))
        assert wrong == 1 and "could not connect the calendar" in capsys.readouterr().out
        right = await run_connect(settings, connect_args(), said.append,
                                  answers(url, USER, password=PASSWORD))
    assert right == 0 and said == ["calendar connected for owner (stored encrypted)"]
    listing: list[str] = []
    await run_connect(settings, argparse.Namespace(command="credentials", action="list"),
                      listing.append)
    assert [line.split("\t")[:2] for line in listing] == [["owner", "calendar"]]
    out = capsys.readouterr().out
    assert PASSWORD not in out and PASSWORD not in " ".join(said + listing)
