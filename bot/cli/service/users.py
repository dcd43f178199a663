"""The service's user and group as this machine knows them."""

from __future__ import annotations

import grp
import pwd


def group_of(user: str) -> str:
    """The user's own group's name (the one `useradd --user-group` makes, before it does)."""
    try:
        return grp.getgrgid(pwd.getpwnam(user).pw_gid).gr_name
    except KeyError:
        return user
