"""`valet doctor` says where SMS may go (and fails when nowhere), the limits on strangers and
segments, and the daily allowance with the models it has no price for."""

from __future__ import annotations

from bot.cli.doctor_costs import check_costs
from bot.cli.doctor_setup import Report
from channels.registry import load_channel_settings

SMS_ON = {"VALET_TWILIO_ACCOUNT_SID": "AC" + "0" * 32}


def doctor(tmp_path, text: str, env: dict[str, str]) -> tuple[list[str], int]:
    path = tmp_path / "valet.yaml"
    path.write_text(text)
    lines: list[str] = []
    report = Report(lines.append)
    check_costs(load_channel_settings(str(path), env={}), env, report)
    return lines, report.problems


def test_doctor_lists_the_countries_sms_may_go_to(tmp_path):
    lines, problems = doctor(tmp_path, "sms:\n  from_number: '+15005550006'\nowner:\n"
                             "  phone_numbers: ['+447700900123']\n", SMS_ON)
    assert problems == 0
    assert "  ok    SMS may go to GB, US only (those of sms.from_number and " \
           "owner.phone_numbers; sms.allowed_countries widens it)" in lines
    assert any("at most one reply per 24 h, all of them 10 an hour; a message at most 3 "
               "segments" in line for line in lines)
    widened, _ = doctor(tmp_path, "sms:\n  allowed_countries: [US, FR]\n", SMS_ON)
    assert "  ok    SMS may go to US, FR only (sms.allowed_countries)" in widened


def test_doctor_fails_when_sms_may_go_nowhere(tmp_path):
    lines, problems = doctor(tmp_path, "sms:\n  messaging_service_sid: MG123\n", SMS_ON)
    assert problems == 1 and any("SMS may go to no country" in line for line in lines)
    quiet, none = doctor(tmp_path, "{}\n", {})  # SMS off: nothing said of it
    assert none == 0 and not any("SMS" in line for line in quiet)


def test_doctor_names_the_models_the_allowance_has_no_price_for(tmp_path):
    lines, problems = doctor(tmp_path, "llm:\n  model: main\n  prices:\n"
                             "    main: {input: 1, output: 2}\n  fallback_models:\n"
                             "    - model: spare\nbudget:\n  owner_daily_usd: 5\n", {})
    assert problems == 0
    assert "  ok    daily allowance: $0.50 a day for everyone but the owner, $5.00 for the " \
           "owner" in lines
    assert "  note  llm.prices has no price for spare: its tokens count as $0 against the " \
           "allowance" in lines
