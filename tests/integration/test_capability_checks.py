"""Each capability is declared, checked and explained: doctor says on, off (and how to turn
it on) or failing (and why); a registry naming an undeclared capability is refused."""

from __future__ import annotations

import pytest

from agents.registry import load_registry
from bot.cli.doctor import run_doctor
from bot.config import ConfigError
from bot.config.registries import BUILTIN_REGISTRY
from bot.credentials import new_key
from tests.fakes.fake_openai import Reply


async def doctor_lines(settings, fake_llm) -> list[str]:
    fake_llm.responder = lambda body: Reply(content="ready")  # every request doctor makes
    lines: list[str] = []
    await run_doctor(settings, lines.append)
    return [line for line in lines if "capability" in line]


async def test_doctor_says_the_calendar_is_off_and_how_to_turn_it_on(app_settings, fake_llm,
                                                                     monkeypatch):
    monkeypatch.delenv("VALET_SECRET_KEY", raising=False)
    lines = await doctor_lines(app_settings(), fake_llm)
    assert "  on    capability weather (Open-Meteo)" in lines
    assert ("  off   capability calendar: to turn it on, set VALET_SECRET_KEY, then run "
            "`valet connect calendar USER`") in lines


async def test_doctor_says_the_calendar_is_off_until_someone_connects_one(
        app_settings, fake_llm, monkeypatch):
    monkeypatch.setenv("VALET_SECRET_KEY", new_key())
    lines = await doctor_lines(app_settings(), fake_llm)
    assert "  off   capability calendar: to turn it on, run `valet connect calendar USER`" \
        in lines


async def test_doctor_says_why_the_calendar_fails_with_a_malformed_key(
        app_settings, fake_llm, monkeypatch):
    monkeypatch.setenv("VALET_SECRET_KEY", "my-password-not-a-key")
    lines = await doctor_lines(app_settings(), fake_llm)
    [calendar] = [line for line in lines if "calendar" in line]
    assert calendar.startswith("  FAIL  capability calendar: failing: VALET_SECRET_KEY: key 1")
    assert "my-password-not-a-key" not in calendar


async def test_doctor_says_weather_is_off_when_turned_off(app_settings, fake_llm):
    lines = await doctor_lines(app_settings(tools={"weather": {"enabled": False}}), fake_llm)
    assert ("  off   capability weather: to turn it on, remove tools.weather.enabled: false "
            "from valet.yaml") in lines


def test_a_registry_naming_an_undeclared_capability_is_refused(tmp_path):
    extra = tmp_path / "mine.yaml"
    extra.write_text("tools:\n  - module: tests.fakes.risky_tools\n    only: [read_inbox]\n"
                     "    capability: mail\n")
    with pytest.raises(ConfigError) as err:
        load_registry([BUILTIN_REGISTRY, extra])
    assert f"{extra}:4: unknown capability 'mail'" in str(err.value)


def test_a_deployment_can_declare_its_own_capability(tmp_path):
    extra = tmp_path / "mine.yaml"
    extra.write_text("capabilities:\n  - name: mail\n    summary: the user's inbox\n"
                     "tools:\n  - module: tests.fakes.risky_tools\n    only: [read_inbox]\n"
                     "    capability: mail\n")
    registry = load_registry([BUILTIN_REGISTRY, extra])
    assert registry.capabilities["mail"].tools == ("read_inbox",)

