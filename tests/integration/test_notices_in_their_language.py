"""Every notice Valet writes outside a turn is in the language of whom reads it: the approval
sweeper's expired and interrupted notices (composed in the background, for the request's
person), the owner's task-budget and strangers-capped notices (composed per owner)."""

from __future__ import annotations

from bot.contracts.approvals import ApprovalStatus
from bot.contracts.clock import FakeClock
from tests.fakes.fake_openai import Reply as LLMReply
from tests.fakes.fake_openai import ToolCall
from tests.helpers import RecordingSender, incoming
from tests.integration.sms_harness import ALICE, new_sid, sms_world
from tests.integration.test_approval_leases import ask_for_transfer, started_app
from tests.integration.test_approval_leases import registry as money_registry
from tests.integration.test_approvals import EMAIL, say, start
from tests.integration.test_strangers_cost import owner_app
from tests.integration.test_task_limits import (
    idle,
    results,
    world,  # noqa: F401 (a fixture)
)


async def test_the_sweepers_expired_notice_is_in_the_persons_language(app_factory, fake_llm,
                                                                      tmp_path):
    app, me = await start(app_factory, tmp_path)
    await app.users.set_language(me, "es", app.clock.now())
    console = RecordingSender("console")
    app.add_channel(console)
    fake_llm.script(LLMReply(tool_calls=[ToolCall("send_email", EMAIL)]))
    await say(app, me, "manda el correo al equipo")
    await app.start()
    app.clock.advance(minutes=31)
    await app.sweep_approvals()
    await app.gateway.wait_idle()
    told = console.texts()[-1]
    assert "esperó 30 minutos tu visto bueno, así que no lo hice" in told, told


async def test_over_budget_the_person_hears_why_in_theirs_the_owner_in_theirs(
        world, fake_llm):  # noqa: F811
    app, bob, owner, sender = world
    await app.users.set_language(bob.id, "es", app.clock.now())
    await app.users.set_language(owner.id, "de", app.clock.now())
    fake_llm.script(LLMReply(tool_calls=[ToolCall("create_scheduled_task", {
        "instruction": "mira el correo", "schedule": "*/5 * * * *"})]),
        LLMReply(content="No puedo tan a menudo."))
    await app.gateway.receive(incoming("mira el correo cada 5 minutos", address="bob"))
    await idle(app)
    [why] = results(fake_llm)
    assert "demasiado a menudo: una tarea que me hace pensar puede ejecutarse como mucho cada " \
           "15 minutos, y esta lo haría cada 5" in why, why
    [notice] = sender.texts("olivia")
    assert notice == ("Bob wollte mehr, als das Budget erlaubt: zu oft: eine Aufgabe, für die "
                      "ich nachdenken muss, darf höchstens alle 15 Minuten laufen, und diese "
                      "liefe alle 5."), notice


async def test_the_strangers_capped_notice_is_in_the_owners_language(db_url, app_factory,
                                                                      fake_llm):
    app, sender = await owner_app(app_factory, db_url)
    owner = await app.ensure_owner()
    await app.users.set_language(owner.id, "de", app.clock.now())
    for i in range(5):
        await app.gateway.receive(incoming("hi", channel="sms", address=f"+1312555{i:04d}"))
    await app.gateway.wait_idle()
    capped = sender.texts("+12125550100")[-1]
    assert capped.startswith("Mir schreiben mehr Unbekannte als sonst: ich habe 3 auf sms in "
                             "dieser Stunde geantwortet"), capped


async def test_an_action_interrupted_before_it_started_is_told_in_the_owners_language(
        app_factory, fake_llm, tmp_path):
    clock = FakeClock()
    dead = await app_factory(clock=clock, agents=money_registry(tmp_path))
    owner = await dead.ensure_owner()
    await dead.users.set_language(owner.id, "de", clock.now())
    approval = await ask_for_transfer(dead, fake_llm)
    assert await dead.approvals.store.decide(approval.id, ApprovalStatus.APPROVED,
                                             by="console:local", at=clock.now())
    # The process died before the action began; the restarted one settles it at its start,
    # outside any turn: the notice is composed for its person, in German.
    app, console = await started_app(app_factory, tmp_path, clock)
    await app.gateway.wait_idle()
    assert console.texts() == ["\"transfer money (to: bob, amount: 5) ausführen\" wurde vor dem "
                               "Start unterbrochen: nichts ist passiert. Frag noch mal, wenn "
                               "du es noch willst."]


async def test_a_channels_own_answers_are_in_the_language_of_whom_they_answer(app_factory,
                                                                              fake_llm):
    """HELP and a picture alone by SMS, a voice note Telegram cannot hear, a message given up
    after failing: a channel knows addresses, the gateway writes its line for the person (by
    SMS in plain letters: `sms.plain_letters`, on for Spanish)."""
    sms, close = await sms_world(app_factory)
    try:
        fake_llm.script(LLMReply(content="¡Hola!"))
        await sms.text("hola")  # known from now on
        await sms.idle()
        ana = await sms.app.identities.resolve("sms", ALICE)
        assert ana is not None
        await sms.app.users.set_language(ana.id, "es", sms.app.clock.now())
        await sms.text("HELP", sid=new_sid())
        await sms.idle()
        assert sms.replies()[-1].startswith("Soy Valet, un asistente personal."), \
            sms.replies()
        await sms.app.gateway.give_up(incoming("", channel="sms", address=ALICE), "unreadable")
        await sms.idle()
        assert sms.replies()[-1].startswith("Perdona, algo fallo al leer ese mensaje"), \
            sms.replies()
        lines = sms.app.persona.lines
        await sms.app.gateway.answer_directly("sms", ALICE,
                                                lambda: lines.telegram_cannot_hear,
                                                dedupe_key="voice-1", kind="door:cannot_hear")
        await sms.idle()
        assert sms.replies()[-1].startswith("Perdona, todavia no puedo escuchar notas de voz"), \
            sms.replies()
        # A stranger (no person behind the address) is answered in the persona's language.
        await sms.app.gateway.answer_directly("sms", "+13125550199",
                                                lambda: lines.telegram_cannot_hear,
                                                dedupe_key="voice-2", kind="door:cannot_hear")
        await sms.idle()
        assert sms.replies("+13125550199") == [lines.telegram_cannot_hear]
        assert lines.telegram_cannot_hear.startswith("Sorry")
    finally:
        await close()
