"""What a call and a segment cost, and what a person may spend a day: prices per model
(cached input billed apart), allowances, days in the person's timezone, and the settings."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.budget import Budget, Price, Prices, dollars, local_day, micros
from bot.config import ConfigError, Settings, load_settings
from bot.contracts.people import DaySpend
from bot.llm.port import TokenUsage


def test_a_call_costs_its_input_cached_input_and_output_tokens_at_the_model_s_price():
    price = Price(input=2.50, output=10.00, cached_input=1.25)  # $ per million tokens
    usage = TokenUsage(input_tokens=10_000, output_tokens=1_000, cached_input_tokens=8_000)
    assert price.cost(usage) == pytest.approx((2_000 * 2.50 + 8_000 * 1.25 + 1_000 * 10) / 1e6)
    assert Price(2.50, 10.00).cost(usage) == pytest.approx((10_000 * 2.5 + 1_000 * 10) / 1e6)
    prices = Prices({"main": price})
    assert prices.cost("main", usage) == price.cost(usage)
    assert prices.cost("a-model-with-no-price", usage) == 0.0


def test_amounts_are_kept_in_millionths_and_read_as_dollars():
    assert micros(0.5) == 500_000 and micros(0.0000004) == 0
    assert dollars(micros(0.5)) == "$0.50" and dollars(1_234_567_890) == "$1,234.57"


def test_the_allowance_is_the_day_s_base_plus_what_the_owner_added():
    budget = Budget(others=micros(0.5))
    assert budget.today(False, DaySpend("2026-01-05", llm=1)) == 500_000
    assert budget.today(False, DaySpend("2026-01-05", raised=500_000)) == 1_000_000
    assert budget.today(True, DaySpend("2026-01-05")) is None  # the owner: no limit
    assert Budget(others=None, owner=micros(2)).today(True, DaySpend()) == 2_000_000


def test_a_day_is_the_person_s_own():
    late = datetime(2026, 1, 5, 23, 30, tzinfo=UTC)
    assert local_day("UTC", late) == "2026-01-05"
    assert local_day("Asia/Tokyo", late) == "2026-01-06"
    assert local_day("America/Los_Angeles", datetime(2026, 1, 6, 5, tzinfo=UTC)) == "2026-01-05"
    assert local_day("Not/AZone", late) == "2026-01-05"


def settings_of(text: str, tmp_path) -> Settings:
    path = tmp_path / "valet.yaml"
    path.write_text(text)
    return load_settings(str(path), env={})


def test_sms_goes_by_default_only_to_the_countries_of_valet_s_number_and_the_owner_s(tmp_path):
    settings = settings_of("sms:\n  from_number: '+15005550006'\n"
                           "owner:\n  phone_numbers: ['+447700900123', '+14165550123']\n",
                           tmp_path)
    assert settings.sms_countries() == ["CA", "GB", "US"]
    widened = settings_of("sms:\n  from_number: '+15005550006'\n"
                          "  allowed_countries: [us, fr]\n", tmp_path)
    assert widened.sms_countries() == ["US", "FR"]
    assert settings_of("{}\n", tmp_path).sms_countries() == []


def test_a_segment_s_price_is_its_country_s_else_the_default(tmp_path):
    settings = settings_of("sms:\n  price_per_segment: {default: 0.01, GB: 0.04}\n", tmp_path)
    assert settings.sms_segment_price("+447700900123") == 0.04
    assert settings.sms_segment_price("+12125550123") == 0.01
    one = settings_of("sms:\n  price_per_segment: 0.02\n", tmp_path)
    assert one.sms_segment_price("+447700900123") == 0.02
    assert settings_of("{}\n", tmp_path).sms_segment_price("+1212") == 0.0083  # the console's


@pytest.mark.parametrize(("text", "says"), [
    ("sms:\n  allowed_countries: [USA]\n", "'USA' is not a country code"),
    ("sms:\n  max_segments: 11\n", "sms.max_segments"),
    ("sms:\n  max_segments: 0\n", "sms.max_segments"),
    ("sms:\n  price_per_segment: {GBR: 0.04}\n", "'GBR' is not a country code"),
    ("sms:\n  price_per_segment: -1\n", "a price is 0 or more"),
    ("budget:\n  daily_usd: -1\n", "budget.daily_usd"),
    ("llm:\n  prices:\n    m: {input: 1}\n", "llm.prices.m.output"),
    ("pairing:\n  notice_minutes: 0\n", "pairing.notice_minutes"),
])
def test_cost_settings_are_checked_with_the_file_and_line(text, says, tmp_path):
    with pytest.raises(ConfigError) as err:
        settings_of(text, tmp_path)
    assert says in str(err.value) and "valet.yaml:" in str(err.value)
