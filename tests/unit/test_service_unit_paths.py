"""The units `valet service install` writes run the `valet` they name wherever it lives:
systemd splits ExecStart= at spaces and expands `%`, so a path with a space is quoted and a `%`
doubled (tests/e2e/test_deploy.py has systemd-analyze read them); the shipped path stays as
it is."""

from __future__ import annotations

import re

from bot.cli.service import units


def _exec_start(unit: str) -> str:
    found = re.search(r"^ExecStart=(.*)$", unit, re.MULTILINE)
    assert found is not None
    return found.group(1)


def test_a_path_with_a_space_is_one_word_of_the_command_line():
    where = units.UnitSettings(valet="/srv/valet clone/.venv/bin/valet")
    assert _exec_start(units.all_in_one(where)) == '"/srv/valet clone/.venv/bin/valet" serve'
    assert _exec_start(units.template(where)) == \
        '"/srv/valet clone/.venv/bin/valet" serve --role %i'


def test_a_percent_sign_in_the_path_is_not_a_specifier():
    where = units.UnitSettings(valet="/srv/100%/bin/valet")
    assert _exec_start(units.all_in_one(where)) == "/srv/100%%/bin/valet serve"


def test_the_shipped_path_is_written_as_it_is():
    assert _exec_start(units.all_in_one(units.UnitSettings())) == "/opt/valet/bin/valet serve"
