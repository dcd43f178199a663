"""The address book: each person's contacts (name, relationship, phone in E.164, email,
Telegram, notes), in the `contacts` table, and how a name or a relationship finds them.

Look-ups ignore case and accents ("ana", "ANA" and "Aña" are the same key) and read the
person's whole book: an address book is small, and matching in Python keeps the two SQL
dialects out of accent folding.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, fields
from datetime import datetime

from bot.db import Database, Row
from bot.text import phones
from bot.text.untrusted import quote_untrusted

MAX_CONTACTS = 2000  # per person: a look-up reads them all
MAX_FIELD = 200
FIELDS = ("relationship", "phone", "email", "telegram", "notes")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_TELEGRAM = re.compile(r"^(@[A-Za-z0-9_]{4,32}|u_[0-9a-f]{10}|owner|\d{3,20})$")
# Words that say whose relation it is, not which: "my sister" is "sister".
_POSSESSIVE = re.compile(r"^(my|our|the)\s+", re.IGNORECASE)


def fold(text: str) -> str:
    """Lower case, accents off, spaces single: the form names are compared in."""
    decomposed = unicodedata.normalize("NFKD", text)
    bare = "".join(c for c in decomposed if not unicodedata.combining(c))
    return " ".join(bare.casefold().split())


def relation_key(text: str) -> str:
    return fold(_POSSESSIVE.sub("", text.strip()))


@dataclass(frozen=True)
class Contact:
    id: int
    name: str
    relationship: str = ""
    phone: str = ""
    email: str = ""
    telegram: str = ""
    notes: str = ""

    @property
    def valet_user(self) -> str | None:
        """The Valet user the Telegram field names (u_..., owner), when it names one rather
        than an @username or a chat id."""
        handle = self.telegram
        return handle if handle and not handle.startswith("@") and not handle.isdigit() \
            else None

    def chat_ids(self) -> dict[str, str]:
        """The contact's ids on chat channels, by channel (a Telegram id kept as digits):
        where a Valet user who wrote from there is found."""
        return {"telegram": self.telegram} if self.telegram.isdigit() else {}

    def line(self) -> str:
        """One line for the model: everything it may need to tell contacts apart."""
        parts = [f"#{self.id} {self.name}"]
        if self.relationship:
            parts.append(f"({self.relationship})")
        for label, value in (("phone", self.phone), ("email", self.email),
                             ("telegram", self.telegram)):
            if value:
                parts.append(f"{label} {value}")
        if not self.notes:
            return " ".join(parts)
        # Notes may have been taken from a mail or a chat: the model reads them as data.
        return " ".join(parts) + "\n" + quote_untrusted(
            self.notes, note="notes kept with this contact, perhaps from a mail or a chat")


def _contact(row: Row) -> Contact:
    return Contact(**{f.name: row[f.name] for f in fields(Contact)})


_COLUMNS = "id, name, relationship, phone, email, telegram, notes"


@dataclass(frozen=True)
class Saved:
    contact: Contact
    created: bool
    changed: tuple[str, ...]  # "phone: +1555... -> +1555..." for each field that changed


def clean_fields(given: dict[str, str | None], default_region: str | None = None
                 ) -> dict[str, str]:
    """The fields that were given, checked and in their stored form; ValueError says what
    is wrong with which one."""
    cleaned: dict[str, str] = {}
    for name, value in given.items():
        if value is None:
            continue
        text = " ".join(value.split())
        if len(text) > MAX_FIELD:
            raise ValueError(f"{name} is too long (at most {MAX_FIELD} characters)")
        if text and name == "phone":
            text = phones.normalize(text, default_region)
        elif text and name == "email":
            if not _EMAIL.match(text):
                raise ValueError(f"{text!r} is not an email address")
            text = text.lower()
        elif text and name == "telegram" and not _TELEGRAM.match(text):
            raise ValueError(f"{text!r} is not a Telegram @username or a Valet user id")
        elif name == "relationship":
            text = _POSSESSIVE.sub("", text)  # "my sister" is kept as "sister"
        cleaned[name] = text
    return cleaned


class ContactStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def all(self, user_id: str) -> list[Contact]:
        rows = await self.db.fetch(
            f"SELECT {_COLUMNS} FROM contacts WHERE user_id = $1 ORDER BY name_key, id"
            " LIMIT $2", user_id, MAX_CONTACTS)
        return [_contact(r) for r in rows]

    async def get(self, user_id: str, contact_id: int) -> Contact | None:
        row = await self.db.fetchrow(
            f"SELECT {_COLUMNS} FROM contacts WHERE user_id = $1 AND id = $2",
            user_id, contact_id)
        return _contact(row) if row else None

    async def by_name(self, user_id: str, name: str) -> Contact | None:
        row = await self.db.fetchrow(
            f"SELECT {_COLUMNS} FROM contacts WHERE user_id = $1 AND name_key = $2",
            user_id, fold(name))
        return _contact(row) if row else None

    async def save(self, user_id: str, name: str, values: dict[str, str], at: datetime
                   ) -> Saved:
        """Add the contact, or change the given fields of the one with that name."""
        name = " ".join(name.split())
        if not name or len(name) > MAX_FIELD:
            raise ValueError("a contact needs a name (at most 200 characters)")
        existing = await self.by_name(user_id, name)
        if existing is None:
            count = await self.db.fetchval(
                "SELECT COUNT(*) FROM contacts WHERE user_id = $1", user_id)
            if int(count or 0) >= MAX_CONTACTS:
                raise ValueError(f"the address book is full ({MAX_CONTACTS} contacts)")
            full = {f: values.get(f, "") for f in FIELDS}
            new_id = await self.db.fetchval(
                "INSERT INTO contacts (user_id, name, name_key, relationship, phone, email,"
                " telegram, notes, created_at, updated_at)"
                " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9) RETURNING id",
                user_id, name, fold(name), *(full[f] for f in FIELDS), at)
            return Saved(Contact(int(new_id), name, **full), True, ())
        old = {f: getattr(existing, f) for f in FIELDS}
        changes = {f: v for f, v in values.items() if f in old and old[f] != v}
        if not changes:
            return Saved(existing, False, ())
        sets = ", ".join(f"{f} = ${i + 3}" for i, f in enumerate(changes))
        await self.db.execute(
            f"UPDATE contacts SET {sets}, updated_at = ${len(changes) + 3}"
            " WHERE user_id = $1 AND id = $2",
            user_id, existing.id, *changes.values(), at)
        updated = Contact(existing.id, existing.name, **{**old, **changes})
        said = tuple(f"{f}: {old[f] or '(none)'} -> {v or '(none)'}" for f, v in changes.items())
        return Saved(updated, False, said)

    async def delete(self, user_id: str, contact_id: int) -> Contact | None:
        row = await self.db.fetchrow(
            f"DELETE FROM contacts WHERE user_id = $1 AND id = $2 RETURNING {_COLUMNS}",
            user_id, contact_id)
        return _contact(row) if row else None

    async def find(self, user_id: str, query: str) -> list[Contact]:
        """The contacts a name or a relationship means: "#12"; an exact name; else names of
        which every word of the query is a word ("ana" -> "Ana Lopez"); else a relationship
        ("my sister" -> sister)."""
        query = query.strip()
        if query.startswith("#") and query[1:].isdigit():
            found = await self.get(user_id, int(query[1:]))
            return [found] if found else []
        contacts = await self.all(user_id)
        return match(contacts, query)


def match(contacts: list[Contact], query: str) -> list[Contact]:
    key = fold(query)
    if not key:
        return []
    exact = [c for c in contacts if fold(c.name) == key]
    if exact:
        return exact
    words = key.split()
    by_words = [c for c in contacts if set(words) <= set(fold(c.name).split())]
    if by_words:
        return by_words
    relation = relation_key(query)
    return [c for c in contacts if c.relationship and relation_key(c.relationship) == relation]
