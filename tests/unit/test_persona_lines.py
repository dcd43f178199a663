"""The persona's lines: every default in persona/lines.py, any of them reworded by a persona
file, a reworded template checked against its placeholders when the persona loads."""

from __future__ import annotations

import pytest

from bot.config import ConfigError
from persona import load_persona
from persona.line_group import placeholders
from persona.lines import DEFAULT, Lines, fill


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
        lines = load_persona(name).lines
        for key in Lines.model_fields:
            assert placeholders(getattr(lines, key)) == placeholders(getattr(DEFAULT, key)), key


def test_fill_leaves_braces_in_the_values_alone():
    assert fill("Reminder: {text}", text="pay {rent}") == "Reminder: pay {rent}"
