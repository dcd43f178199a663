"""The persona's lines: every default in persona/lines.py, any of them reworded by a persona
file, a reworded template checked against its placeholders when the persona loads; and a
channel's own lines (channels/whatsapp/lines.py) reworded and checked the same way."""

from __future__ import annotations

import pytest

from bot.config import ConfigError
from bot.gateway.door import ChannelHost
from channels.registry import specs
from channels.whatsapp.lines import WhatsAppLines
from persona import load_persona
from persona.line_group import LineGroup, placeholders
from persona.lines import DEFAULT, Lines, fill
from persona.speaking import speaking_to


def write(tmp_path, text: str) -> str:
    path = tmp_path / "p.yaml"
    path.write_text("name: X\nsystem_prompt: hi\n" + text, encoding="utf-8")
    return str(path)


def test_a_persona_rewords_any_line_and_keeps_the_other_defaults(tmp_path):
    persona = load_persona(write(tmp_path, "lines:\n  sms_help: Text me.\n"
                                           "  reminder: 'Psst: {text}'\n"))
    assert persona.lines.sms_help == "Text me."
    assert fill(persona.lines.reminder, text="stretch") == "Psst: stretch"
    assert persona.lines.telegram_cannot_see == DEFAULT.telegram_cannot_see


def test_a_template_that_drops_or_adds_a_placeholder_is_refused_with_file_line_and_key(
        tmp_path):
    path = write(tmp_path, "lines:\n  approval_expired: '“{summary}” expired {when}.'\n"
                           "  cancelled: 'Stopped {name}.'\n")
    with pytest.raises(ConfigError) as err:
        load_persona(path)
    assert err.value.lines == [
        f"{path}:4: lines.approval_expired: {{minutes}} is missing; {{when}} is not known "
        "here (this line takes {minutes}, {summary})",
        f"{path}:5: lines.cancelled: {{name}} is not known here (this line takes no "
        "placeholders)",
    ]


def test_an_unknown_line_is_an_error_naming_the_nearest_key(tmp_path):
    path = write(tmp_path, "lines:\n  sms_halp: Text me.\n")
    with pytest.raises(ConfigError, match=r"p.yaml:4: lines.sms_halp: unknown setting; did you "
                                          r"mean sms_help\?"):
        load_persona(path)


def test_the_built_in_personas_keep_every_placeholder():
    for name in ("default", "jeeves"):
        persona = load_persona(name, line_groups=CHANNEL_GROUPS)
        lines = persona.lines
        for key in Lines.model_fields:
            assert placeholders(getattr(lines, key)) == placeholders(getattr(DEFAULT, key)), key
        for group in CHANNEL_GROUPS:  # the channels' own lines, as the persona says them
            words, defaults = persona.words(group), group()
            for key in group.model_fields:
                assert placeholders(getattr(words, key)) == \
                    placeholders(getattr(defaults, key)), key


def test_fill_leaves_braces_in_the_values_alone():
    assert fill("Reminder: {text}", text="pay {rent}") == "Reminder: pay {rent}"


# A channel's own lines (channels/whatsapp/lines.py), handed to the persona by the registry.
CHANNEL_GROUPS = specs().line_groups()


def test_a_persona_rewords_a_channels_line_in_its_language_and_in_a_translation(tmp_path):
    path = write(tmp_path, "lines:\n  whatsapp_button_approve: 'Yes, do'\n"
                           "translations:\n  fr:\n    whatsapp_button_approve: 'Oui, allez'\n")
    persona = load_persona(path, line_groups=CHANNEL_GROUPS)
    words = persona.words(WhatsAppLines)
    assert words.whatsapp_button_approve == "Yes, do"
    assert words.whatsapp_button_cancel == WhatsAppLines().whatsapp_button_cancel
    with speaking_to("fr"):
        assert words.whatsapp_button_approve == "Oui, allez"
        assert words.whatsapp_button_cancel == "✖️ Annuler"  # the package's translation
    with speaking_to("de"):
        assert words.whatsapp_button_approve == "✅ Ja"  # reworded in English and French only
    assert persona.lines.cancelled == DEFAULT.cancelled  # `Lines` as before
    assert persona.words(WhatsAppLines) is words  # built once per persona


def test_a_channels_line_with_a_wrong_placeholder_is_refused_with_file_line_and_key(tmp_path):
    path = write(tmp_path, "lines:\n  whatsapp_elsewhere: 'Came here from {app}.'\n")
    with pytest.raises(ConfigError) as err:
        load_persona(path, line_groups=CHANNEL_GROUPS)
    assert err.value.lines == [
        f"{path}:4: lines.whatsapp_elsewhere: {{channel}} is missing; {{app}} is not known "
        "here (this line takes {channel})"]
    translated = write(tmp_path, "translations:\n  es:\n    whatsapp_elsewhere: 'Llegó aquí.'\n")
    with pytest.raises(ConfigError, match=r"p.yaml:3: translations: es: whatsapp_elsewhere: .*"
                                          r"\{channel\} is missing"):
        load_persona(translated, line_groups=CHANNEL_GROUPS)


def test_an_unknown_channel_line_is_refused_naming_the_nearest_key(tmp_path):
    path = write(tmp_path, "lines:\n  whatsapp_button_aprove: Sure.\n")
    with pytest.raises(ConfigError, match=r"p.yaml:4: lines.whatsapp_button_aprove: unknown "
                                          r"setting; did you mean whatsapp_button_approve\?"):
        load_persona(path, line_groups=CHANNEL_GROUPS)
    # Without the channels' groups, their keys are no line the persona may reword.
    known = write(tmp_path, "lines:\n  whatsapp_button_approve: Sure.\n")
    with pytest.raises(ConfigError, match=r"lines.whatsapp_button_approve: unknown setting"):
        load_persona(known)


def test_a_group_the_persona_was_not_loaded_with_is_its_defaults_in_each_language():
    words = load_persona("default").words(WhatsAppLines)
    assert words.whatsapp_button_approve == "✅ Yes"
    with speaking_to("es"):
        assert words.whatsapp_button_approve == "✅ Sí"


def test_a_channel_line_named_like_a_persona_line_is_refused():
    class Clashing(LineGroup):
        cancelled: str = "Stopped."

    with pytest.raises(ConfigError, match=r"lines named twice: Clashing.cancelled \(also "
                                          r"Lines's\)"):
        load_persona("default", line_groups=(Clashing,))


def test_a_channel_without_a_persona_says_the_catalogs_words():
    host = ChannelHost(door=None, identities=None, clock=None, db=None,  # type: ignore[arg-type]
                       lines=DEFAULT, commands=None)  # type: ignore[arg-type]
    with speaking_to("pt"):
        assert host.words(WhatsAppLines).whatsapp_button_cancel == "✖️ Cancelar"
