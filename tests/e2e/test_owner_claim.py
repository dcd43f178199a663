"""Becoming the owner without knowing one's ids: with no owner address configured, `valet
serve` prints a one-time claim code; the first person who sends it becomes the owner (linked
at once, recorded in valet.yaml), and the code is dead. Wrong codes and a second use are
guesses, limited like every code a stranger can try."""

from __future__ import annotations

import asyncio
import re
import sys

import yaml

from bot.app.owner import OWNER_ID, open_claim_if_ownerless
from bot.people.claims import CLAIM_GUESS_KIND
from persona import load_persona
from tests.e2e.telegram_harness import bot_messages
from tests.e2e.test_console_pipe import ROOT, clean_env
from tests.fakes.fake_openai import Reply
from tests.fakes.fake_telegram import TOKEN, FakeTelegram
from tests.ports import free_port

CLAIMED = load_persona("default").lines.owner_claimed
REACH = ['send "/start {code}" to @valet_test_bot on Telegram']


async def _open_claim(app) -> str:
    notice = await open_claim_if_ownerless(app.access.claims, app.identities, OWNER_ID, REACH,
                                           app.clock.now())
    assert notice is not None
    return re.search(r"/start (\w+)", notice).group(1)


async def _guesses(app, chat: int) -> int:
    return int(await app.db.fetchval(
        "SELECT attempts FROM access_attempts WHERE channel = 'telegram' AND address = $1"
        " AND kind = $2", str(chat), CLAIM_GUESS_KIND) or 0)


async def test_the_first_start_code_becomes_the_owner_and_the_code_dies(start_telegram,
                                                                      fake_llm, tmp_path):
    h = await start_telegram(owner_ids=())
    code = await _open_claim(h.app)
    assert await _open_claim(h.app) == code  # a restart prints the same open code

    h.tg.user_says(55, "/start ZZZZZZZZ")  # a wrong code: a guess, then the usual stranger
    await h.tg.wait_for(lambda: bot_messages(h.tg, 55))
    assert "code" in bot_messages(h.tg, 55)[0] and CLAIMED not in bot_messages(h.tg, 55)
    assert await _guesses(h.app, 55) == 1

    h.tg.user_says(77, f"/start {code.lower()}")
    await h.tg.wait_for(lambda: bot_messages(h.tg, 77))
    assert bot_messages(h.tg, 77) == [CLAIMED]
    owner = await h.app.identities.resolve("telegram", "77")
    assert owner is not None and owner.id == OWNER_ID and owner.is_owner
    config = yaml.safe_load((tmp_path / "valet.yaml").read_text())
    assert config["owner"]["telegram_ids"] == ["77"]
    assert config["memory"] == {"enabled": False}  # the rest of the file is kept

    h.tg.user_says(99, f"/start {code}")  # a second use: nothing but a guess
    await h.tg.wait_for(lambda: bot_messages(h.tg, 99))
    assert CLAIMED not in bot_messages(h.tg, 99)
    assert await h.app.identities.resolve("telegram", "99") is None
    assert await _guesses(h.app, 99) == 1

    fake_llm.script(Reply(content="At your service."))
    h.tg.user_says(77, "hello")
    await h.tg.wait_for(lambda: "At your service." in bot_messages(h.tg, 77))
    assert fake_llm.calls == 1  # only the owner's message reached the LLM
    # With an owner address known, nothing is opened any more.
    assert await open_claim_if_ownerless(h.app.access.claims, h.app.identities, OWNER_ID,
                                         REACH, h.app.clock.now()) is None


async def test_too_many_wrong_codes_and_even_the_right_one_is_refused(start_telegram,
                                                                      fake_llm):
    h = await start_telegram(owner_ids=())
    code = await _open_claim(h.app)
    limit = h.app.settings.access.max_code_guesses
    for _ in range(limit):
        h.tg.user_says(66, "/start WRNGCDAX")
    h.tg.user_says(66, f"/start {code}")  # right, but after the limit: not even looked at
    for _ in range(400):
        if await _guesses(h.app, 66) >= limit + 1:
            break
        await asyncio.sleep(0.05)
    await h.app.gateway.wait_idle()
    assert await _guesses(h.app, 66) == limit + 1
    assert await h.app.identities.resolve("telegram", "66") is None
    assert await h.app.access.claims.open_code() == code  # still open for the real owner


async def test_serve_prints_the_claim_code_and_records_the_owner(fake_llm, tmp_path):
    async with FakeTelegram() as tg:
        env = clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url,
                        VALET_LLM_MODEL="fake-model", VALET_HTTP_PORT=str(free_port()),
                        VALET_TELEGRAM_TOKEN=TOKEN, VALET_TELEGRAM_API_URL=tg.api_url)
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "serve", env=env, cwd=ROOT,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
        try:
            assert proc.stderr is not None
            code = None
            while code is None:
                line = (await asyncio.wait_for(proc.stderr.readline(), 60)).decode()
                assert line, "valet serve ended before printing a claim code"
                found = re.search(r'send "/start (\w+)" to @valet_test_bot', line)
                code = found.group(1) if found else None
            tg.user_says(4242, f"/start {code}")
            await tg.wait_for(lambda: tg.texts(4242), timeout=30)
            assert tg.texts(4242) == [CLAIMED]
            for _ in range(100):
                if "4242" in (tmp_path / "valet.yaml").read_text():
                    break
                await asyncio.sleep(0.1)
            assert yaml.safe_load((tmp_path / "valet.yaml").read_text())["owner"] == {
                "telegram_ids": ["4242"]}
        finally:
            proc.kill()
            await proc.wait()


async def test_texting_the_code_alone_by_sms_becomes_the_owner(app_factory, tmp_path):
    from tests.integration.sms_harness import ALICE, sms_world

    world, close = await sms_world(app_factory, allow=(), policy="pairing")
    try:
        notice = await open_claim_if_ownerless(
            world.app.access.claims, world.app.identities, OWNER_ID, ["text {code} to Valet"],
            world.app.clock.now())
        code = re.search(r"text (\w+) to", notice).group(1)
        await world.text(f" {code.lower()} ")
        await world.idle()
        assert world.replies() == [CLAIMED]
        assert (await world.app.identities.resolve("sms", ALICE)).id == OWNER_ID
        config = yaml.safe_load((tmp_path / "valet.yaml").read_text())
        assert config["owner"]["phone_numbers"] == [ALICE]
    finally:
        await close()


async def test_the_claim_leaves_no_pairing_code_behind(start_telegram, fake_llm):
    """Written before the claim, the new owner had a pairing code of their own, and so had a
    stranger: after it, `valet pair list` is empty. The owner's is settled (they are in), the
    stranger's expires (nobody could answer it) and a new one is made when they write
    again."""
    h = await start_telegram(owner_ids=())
    code = await _open_claim(h.app)
    for chat in (55, 77):  # a stranger, then the owner-to-be, before the claim
        h.tg.user_says(chat, "hi")
        await h.tg.wait_for(lambda chat=chat: bot_messages(h.tg, chat))
    assert len(await h.app.access.list_pairings(h.app.clock.now())) == 2

    h.tg.user_says(77, f"/start {code}")
    await h.tg.wait_for(lambda: CLAIMED in bot_messages(h.tg, 77))
    await h.app.gateway.wait_idle()
    assert await h.app.access.list_pairings(h.app.clock.now()) == []
    statuses = {r["address"]: r["status"] for r in await h.app.db.fetch(
        "SELECT address, status FROM pairing_requests")}
    assert statuses == {"55": "expired", "77": "approved"}

    h.tg.user_says(55, "hello again")  # the stranger writes again: a fresh code
    await h.tg.wait_for(lambda: len(bot_messages(h.tg, 55)) >= 2)
    [fresh] = await h.app.access.list_pairings(h.app.clock.now())
    assert fresh.address == "55"
    # The new owner is told at once (what was told before the claim reached nobody), of
    # that one request alone.
    await h.tg.wait_for(lambda: any(fresh.code in m for m in bot_messages(h.tg, 77)))
    [notice] = [m for m in bot_messages(h.tg, 77) if fresh.code in m]
    assert "wants to talk to me" in notice and "people asked" not in notice
    assert fake_llm.calls == 0  # strangers never reach the LLM
