"""A channel's own section of valet.yaml (bot.config.channel_settings): WhatsApp's `whatsapp:`
is declared in its package and checked by the loader with the rest of the file, each mistake
with its line; its environment variable sets it; the core alone knows no such key."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config import ConfigError, Settings, load_settings
from channels.registry import channel_sections, load_channel_settings
from channels.whatsapp.settings import SECTION, WhatsAppSettings

SID = "HX" + "a" * 32


def written(tmp_path: Path, text: str) -> str:
    path = tmp_path / "valet.yaml"
    path.write_text(text)
    return str(path)


def refused(path: str) -> list[str]:
    """What loading valet.yaml at `path` with the channels' sections says is wrong."""
    with pytest.raises(ConfigError) as caught:
        load_channel_settings(path, env={})
    return caught.value.lines


def test_the_section_is_read_and_kept_for_its_channel(tmp_path: Path) -> None:
    path = written(tmp_path, f"whatsapp:\n  from_number: '+14155238886'\n  templates:\n"
                             f"    reminder: {SID}\n")
    settings = load_channel_settings(path, env={})
    section = SECTION.of(settings)
    assert isinstance(section, WhatsAppSettings)
    assert section.from_number == "+14155238886" and section.templates == {"reminder": SID}
    # A copy of the settings holds it too (a caller's model_copy for one change).
    assert SECTION.of(settings.model_copy(update={"persona": "jeeves"})).templates == \
        {"reminder": SID}


def test_each_mistake_in_it_is_named_with_its_line(tmp_path: Path) -> None:
    path = written(tmp_path, "timezone: Nowhere/Else\nwhatsapp:\n  buttons: maybe\n"
                             "  templates:\n    birthday: " + SID + "\n  from_numbr: x\n")
    lines = refused(path)
    assert lines[0].startswith(f"{path}:1: timezone: unknown timezone")
    assert lines[1].startswith(f"{path}:3: whatsapp.buttons: ")
    assert lines[2].startswith(f"{path}:4: whatsapp.templates: ") and "birthday: not a kind" \
        in lines[2]
    assert lines[3] == f"{path}:6: whatsapp.from_numbr: unknown setting; did you mean " \
        "from_number?"


def test_its_environment_variable_sets_it_over_the_file(tmp_path: Path) -> None:
    path = written(tmp_path, "whatsapp:\n  from_number: '+14155238886'\n")
    settings = load_channel_settings(path, env={"VALET_WHATSAPP_FROM_NUMBER": "+15005550006"})
    assert SECTION.of(settings).from_number == "+15005550006"


def test_a_section_that_is_not_a_mapping_is_said_at_its_line(tmp_path: Path) -> None:
    path = written(tmp_path, "timezone: UTC\nwhatsapp: 5\n")
    [line] = refused(path)
    assert line.startswith(f"{path}:2: whatsapp: ")


def test_the_core_alone_names_no_channel(tmp_path: Path) -> None:
    """bot.config knows no WhatsApp: without the registry's sections the key is unknown, and
    settings made without it give the section's defaults."""
    path = written(tmp_path, "whatsapp:\n  buttons: false\n")
    with pytest.raises(ConfigError, match=r"valet.yaml:1: whatsapp: unknown setting"):
        load_settings(path, env={})
    assert SECTION.of(Settings()) == WhatsAppSettings()
    assert SECTION.of(SECTION.into(Settings(), WhatsAppSettings(buttons=False))).buttons is False


def test_a_channel_module_that_cannot_be_used_is_said_at_its_key(tmp_path: Path) -> None:
    path = written(tmp_path, "memory:\n  enabled: false\nchannel_modules: [no.such.module]\n")
    [line] = refused(path)
    assert line.startswith(f"{path}:3: channel_modules: no.such.module: cannot be imported")


def test_the_registry_gives_every_channel_section_once() -> None:
    keys = [section.key for section in channel_sections([])]
    assert "whatsapp" in keys and len(keys) == len(set(keys))
    assert [s.key for s in channel_sections(["tests.fakes.toy_channel.spec"])] == [*keys, "toy"]
