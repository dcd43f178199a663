"""Phone numbers in E.164 everywhere, and a new user's timezone from their number."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.config import ConfigError, load_settings
from bot.db import connect
from bot.people.identity import IdentityStore
from bot.people.users import UserStore
from bot.text.phones import PhoneNumberError, guess_timezone, normalize

NOW = datetime(2026, 1, 5, 9, tzinfo=UTC)


def test_numbers_are_written_in_e164_however_they_were_typed():
    assert normalize("+1 (212) 555-0123") == "+12125550123"
    assert normalize("020 7946 0000", "GB") == "+442079460000"
    assert normalize("+91 98765 43210") == "+919876543210"


def test_a_number_without_country_code_or_region_is_a_clear_error():
    with pytest.raises(PhoneNumberError, match="country code"):
        normalize("212 555 0123")
    with pytest.raises(PhoneNumberError):
        normalize("+1 212")


def test_us_uk_and_indian_numbers_each_get_a_sensible_timezone():
    assert guess_timezone("+12125550123", "UTC").zone == "America/New_York"
    assert guess_timezone("+16505550123", "UTC").zone == "America/Los_Angeles"
    assert guess_timezone("+442079460000", "UTC").zone == "Europe/London"
    india = guess_timezone("+919876543210", "UTC")
    assert india.zone == "Asia/Kolkata" and not india.provisional


def test_a_us_number_across_a_zone_border_is_provisional_with_its_candidates():
    idaho = guess_timezone("+12085550123", "UTC")
    assert idaho.provisional
    assert set(idaho.candidates) == {"America/Boise", "America/Los_Angeles"}
    assert idaho.zone in idaho.candidates


def test_a_non_geographic_number_keeps_the_default_and_is_provisional():
    toll_free = guess_timezone("+18005550123", "America/Chicago")
    assert toll_free.zone == "America/Chicago" and toll_free.provisional


async def test_new_sms_users_get_the_guess_and_saying_where_they_are_ends_it(tmp_path):
    db = await connect(f"sqlite:///{tmp_path}/p.db")
    try:
        users = UserStore(db)
        identities = IdentityStore(db, users)
        uk = await identities.create_user("sms", "+442079460000", display_name="",
                                          default_timezone="UTC", at=NOW)
        us = await identities.create_user("sms", "+12085550123", display_name="",
                                          default_timezone="UTC", at=NOW)
        tg = await identities.create_user("telegram", "42", display_name="",
                                          default_timezone="Europe/Paris", at=NOW)
        assert (uk.timezone, uk.timezone_candidates) == ("Europe/London", ())
        assert len(us.timezone_candidates) == 2
        assert (tg.timezone, tg.timezone_candidates) == ("Europe/Paris", ())
        await users.set_timezone(us.id, "America/Boise")  # what set_my_timezone does
        confirmed = await users.get(us.id)
        assert (confirmed.timezone, confirmed.timezone_candidates) == ("America/Boise", ())
    finally:
        await db.close()


def test_configured_numbers_are_normalised_at_load(tmp_path):
    config = tmp_path / "valet.yaml"
    config.write_text("owner:\n  phone_numbers: ['+1 (212) 555-0123']\n"
                      "sms:\n  default_region: GB\n  from_number: '+1 500 555 0006'\n"
                      "access:\n  channels:\n    sms:\n      policy: allowlist\n"
                      "      allow: ['020 7946 0000']\n")
    settings = load_settings(str(config), env={})
    assert settings.owner.phone_numbers == ["+12125550123"]
    assert settings.access.channels["sms"].allow == ["+442079460000"]
    assert settings.sms.from_number == "+15005550006"


def test_a_bad_configured_number_names_the_file_line_and_key(tmp_path):
    config = tmp_path / "valet.yaml"
    config.write_text("owner:\n  phone_numbers:\n    - '+12125550123'\n    - '555 0123'\n")
    with pytest.raises(ConfigError, match=r"valet.yaml:4: owner.phone_numbers: '555 0123'"):
        load_settings(str(config), env={})
