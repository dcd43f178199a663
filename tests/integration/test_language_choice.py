"""A person's language, chosen and kept: /language, the profile tool, and the one offer after
the first messages (made once, in the language it proposes; anything but its yes closes it
for good, and nothing is switched on a guess)."""

from __future__ import annotations

from bot.text.language_guess import guess_language
from tests.fakes.fake_openai import Reply, ToolCall
from tests.integration.test_agents import say, start


async def test_language_command_sets_it_and_answers_in_it(app_factory):
    app, me = await start(app_factory)
    assert (await say(app, me, "/language")).text.startswith("I write to you in English.")
    assert (await say(app, me, "/language klingon")).text == \
        "I don't know the language klingon. I can write in: en, es, fr, de, pt."
    assert (await say(app, me, "/language français")).text == \
        "Très bien, je vous écris désormais en français."
    assert (await app.users.get(me)).language == "fr"
    help_text = (await say(app, me, "/help")).text
    assert help_text.startswith("Commandes :\n/help: ce que je comprends")


async def test_the_model_is_told_the_language_and_the_tool_sets_it(app_factory, fake_llm):
    app, me = await start(app_factory)
    fake_llm.script(Reply(tool_calls=[ToolCall("set_my_language", {"language": "German"})]),
                    Reply(content="Gut."), Reply(content="Klar."))
    assert (await say(app, me, "write to me in German from now on")).text == "Gut."
    assert (await app.users.get(me)).language == "de"
    await say(app, me, "und morgen?")
    assert "This user chose German: write every answer in German" in \
        fake_llm.requests[-1]["messages"][0]["content"]


async def test_the_offer_is_made_once_and_anything_but_yes_closes_it(app_factory, fake_llm):
    app, me = await start(app_factory)
    fake_llm.script(Reply(content="Bien sûr."), Reply(content="D'accord."),
                    Reply(content="Voilà."))
    first = (await say(app, me, "Bonjour, peux-tu me rappeler demain de appeler ma mère ?")).text
    assert first == ("Bien sûr.\n\nVoulez-vous que je vous écrive en français ? "
                     "Répondez OUI.")
    assert (await say(app, me, "non merci, pas maintenant")).text == "D'accord."
    user = await app.users.get(me)
    assert user.language is None and user.language_offer is None
    # Still writing in French: the offer is not made again.
    assert (await say(app, me, "Et tu peux me dire quel temps il fait demain ?")).text == \
        "Voilà."
    assert (await app.users.get(me)).language is None


async def test_yes_in_the_offered_language_sets_it(app_factory, fake_llm):
    app, me = await start(app_factory)
    fake_llm.script(Reply(content="Claro."))
    said = (await say(app, me, "Hola, ¿me puedes ayudar con una cosa mañana?")).text
    assert said.endswith("¿Prefieres que te escriba en español? Responde SÍ.")
    assert (await say(app, me, "sí")).text == \
        "Perfecto, a partir de ahora te escribo en español."
    assert (await app.users.get(me)).language == "es"


async def test_english_and_short_messages_are_not_guessed_as_another_language():
    assert guess_language("ok") is None
    assert guess_language("hola que tal") is None  # too few words to be clear
    assert guess_language("Kannst du mich bitte morgen an den Zahnarzt erinnern?").language \
        == "de"
    assert guess_language("Remind me to call mom tomorrow please").language == "en"
    assert guess_language("Você pode me lembrar amanhã de ligar para minha mãe?").language \
        == "pt"


async def test_a_waiting_agent_is_named_in_the_persons_language(app_factory, fake_llm):
    app, me = await start(app_factory)
    await app.users.set_language(me, "de", app.clock.now())
    fake_llm.script(Reply(tool_calls=[ToolCall("take_note", {})]))
    assert (await say(app, me, "schreib was auf")).text == "Was soll in der Notiz stehen?"
    assert (await say(app, me, "/pending")).text.endswith("1. Notiz: “Was soll in der Notiz "
                                                         "stehen?”")
    assert (await say(app, me, "/cancel")).text == "Okay, abgebrochen: Notiz."
