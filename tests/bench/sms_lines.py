"""What Valet's own lines cost by SMS in each language: every line of persona/ (its catalog,
persona/catalog/) rendered as the SMS channel sends it (channels.sms.render: plain text,
emoji dropped, punctuation folded to GSM-7), counted in segments (GSM-7: 160 characters, 153
a part; UCS-2: 70, 67), without and with plain letters (channels.sms.plain_letters).

Placeholders are filled with short typical values (a name, a code, "Send the email to Ana"),
so a line's count is what it costs with them; the lines whose count differs between the two
are listed with both counts."""

from __future__ import annotations

from bot.contracts.envelopes import OutboundMessage
from channels.sms.gsm import Encoding, cost
from channels.sms.plain_letters import PLAIN_BY_DEFAULT, plain_letters, plain_letters_setting
from channels.sms.render import render
from persona.catalog import LANGUAGES, lines_in
from persona.line_group import placeholders
from persona.lines import Lines, fill
from persona.speaking import speaking_to

SAMPLE = {"summary": "Send the email to Ana", "name": "Ana", "code": "4K7QXZ", "n": "1",
          "minutes": "10", "what": "call mom", "when": "tomorrow at 15:00", "time": "15:00"}


def sample(line: str) -> str:
    """The line with its placeholders filled (a typical value, or <name>)."""
    return fill(line, **{name: SAMPLE.get(name, f"<{name}>") for name in placeholders(line)})


def sms_cost(text: str, *, plain: bool) -> tuple[int, Encoding]:
    """Segments and encoding of `text` sent by SMS, with or without plain letters."""
    with plain_letters_setting(False):
        body = plain_letters(text) if plain else text
        sent = "".join(b.text for b in render(OutboundMessage(1, "u1", "sms", "+1", body)))
    counted = cost(sent)
    return counted.segments, counted.encoding


def line_costs(language: str) -> dict[str, tuple[tuple[int, Encoding], tuple[int, Encoding]]]:
    """Each line's (without, with) plain letters."""
    lines = lines_in(language)
    with speaking_to(language):
        return {key: (sms_cost(sample(getattr(lines, key)), plain=False),
                      sms_cost(sample(getattr(lines, key)), plain=True))
                for key in Lines.model_fields}


def segment_table() -> list[tuple[str, int, int, int, int, int]]:
    """Per language: lines, segments without and with plain letters, UCS-2 lines without and
    with them."""
    rows = []
    for language in LANGUAGES:
        costs = line_costs(language).values()
        rows.append((language, len(costs), sum(raw[0] for raw, _ in costs),
                     sum(plain[0] for _, plain in costs),
                     sum(raw[1] is Encoding.UCS2 for raw, _ in costs),
                     sum(plain[1] is Encoding.UCS2 for _, plain in costs)))
    return rows


async def run() -> list[str]:
    out = ["sms_lines: Valet's own lines by SMS, segments per language",
           "  language  lines  segments  with plain letters  UCS-2 lines  UCS-2 with plain"
           "  plain by default"]
    rows = segment_table()
    for language, count, raw, plain, ucs, ucs_plain in rows:
        out.append(f"  {language:8}  {count:5}  {raw:8}  {plain:18}  {ucs:11}  {ucs_plain:16}"
                   f"  {'yes' if language in PLAIN_BY_DEFAULT else 'no'}")
    # The floor: English, written in GSM-7, costs what its length costs; the goal: with plain
    # letters, no language's lines cost more than 5% over English's, and none is UCS-2.
    english = rows[0][3]
    worst = max(plain for _, _, _, plain, _, _ in rows)
    met = worst <= english * 1.05 and all(row[5] == 0 for row in rows)
    out.append(f"  floor: {english} segments (English); goal: every language with plain "
               f"letters <= {english * 1.05:.0f} and no line in UCS-2: worst {worst}, "
               f"{'met' if met else 'NOT MET'}")
    out.append("  lines whose segments differ (without -> with plain letters):")
    for language in LANGUAGES:
        differ = [f"{key} {raw[0]}->{plain[0]}"
                  for key, (raw, plain) in line_costs(language).items() if raw[0] != plain[0]]
        out.append(f"  {language}: {len(differ)} lines" + (": " + ", ".join(differ)
                                                         if differ else ""))
    out.append("  every line, segments without/with plain letters: "
               + " ".join(LANGUAGES))
    per_language = {language: line_costs(language) for language in LANGUAGES}
    for key in Lines.model_fields:
        out.append(f"    {key:36} " + "  ".join(
            f"{per_language[lang][key][0][0]}/{per_language[lang][key][1][0]}"
            for lang in LANGUAGES))
    return out
