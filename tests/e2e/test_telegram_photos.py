"""Photos on Telegram: the real python-telegram-bot against the fake Bot API server (which
serves the photo's bytes through getFile), the real gateway and inbox, the fake LLM (which
records the image parts it was sent and refuses malformed ones as the real API does)."""

from __future__ import annotations

import asyncio
import base64
import json
import sys

from channels.telegram.kinds import MAX_PHOTO_BYTES
from persona.lines import DEFAULT
from tests.e2e.telegram_harness import OWNER_CHAT, bot_messages
from tests.e2e.test_console_pipe import ROOT, clean_env
from tests.e2e.test_serve import _until_up
from tests.fakes.fake_openai import Hang, Reply
from tests.fakes.fake_telegram import TOKEN, FakeTelegram
from tests.helpers import said
from tests.ports import free_port

THUMB = b"\xff\xd8\xff thumbnail"
PHOTO = b"\xff\xd8\xff the photo at its largest size under the cap" * 100
TOO_BIG = b"\xff" * (MAX_PHOTO_BYTES + 1)


async def _user_messages(app) -> list[str]:
    rows = await app.db.fetch("SELECT content FROM messages WHERE role = 'user' ORDER BY seq")
    return [r["content"] for r in rows]


async def test_a_photo_reaches_the_model_with_its_caption_once_and_is_stored_as_a_placeholder(
        start_telegram, fake_llm):
    fake_llm.script(Reply(content="That's a fern."), Reply(content="You're welcome."))
    h = await start_telegram(vision=True)
    h.tg.user_sends_photo(OWNER_CHAT, "what plant is this?", sizes=[THUMB, PHOTO, TOO_BIG])
    await h.tg.wait_for(lambda: bot_messages(h.tg, OWNER_CHAT) == ["That's a fern."])

    # This turn's request: the caption and the largest rendition under the cap, as an image.
    assert fake_llm.images[0] == [("image/jpeg", PHOTO)]
    question = fake_llm.requests[0]["messages"][-1]
    assert question["role"] == "user"
    assert said(question["content"]) == [
        {"type": "text", "text": "what plant is this?"},
        {"type": "image_url", "image_url": {
            "url": "data:image/jpeg;base64," + base64.b64encode(PHOTO).decode()}}]
    [fetched] = [c.params["file_id"] for c in h.tg.called("getFile")]
    assert h.tg.files[fetched] == PHOTO

    # The next turn does not carry the image again: the history holds a placeholder.
    h.tg.user_says(OWNER_CHAT, "thanks")
    await h.tg.wait_for(lambda: len(bot_messages(h.tg, OWNER_CHAT)) == 2)
    assert fake_llm.images[1] == []
    earlier = [said(m["content"]) for m in fake_llm.requests[1]["messages"]
               if m["role"] == "user"]
    assert earlier == ["[photo] what plant is this?", "thanks"]
    assert await _user_messages(h.app) == ["[photo] what plant is this?", "thanks"]
    assert len(h.tg.called("getFile")) == 1

    # The inbox keeps the file's reference, never its bytes.
    [media] = [r["media"] for r in await h.app.db.fetch(
        "SELECT media FROM inbox WHERE media IS NOT NULL")]
    assert json.loads(media) == [{"kind": "photo", "ref": fetched, "mime": "image/jpeg",
                                  "size": len(PHOTO)}]


async def test_a_photo_that_can_no_longer_be_fetched_is_answered_from_its_caption(
        start_telegram, fake_llm):
    fake_llm.script(Reply(content="I couldn't see the photo, but receipts go in Finance."))
    h = await start_telegram(vision=True)
    h.tg.user_sends_photo(OWNER_CHAT, "where do I file this receipt?")
    h.tg.files.clear()  # Telegram no longer has the file: getFile answers 400
    await h.tg.wait_for(lambda: bot_messages(h.tg, OWNER_CHAT))
    assert bot_messages(h.tg, OWNER_CHAT) == [
        "I couldn't see the photo, but receipts go in Finance."]
    assert fake_llm.images == [[]]
    assert said(fake_llm.requests[0]["messages"][-1]["content"]) == (
        "[photo] where do I file this receipt?\n"
        "(A photo came with this message, but it could not be loaded.)")


async def test_with_vision_off_a_photo_gets_the_polite_sentence_and_is_never_downloaded(
        start_telegram, fake_llm):
    h = await start_telegram(vision=False)
    h.tg.user_sends_photo(OWNER_CHAT, sizes=[THUMB, PHOTO])
    await h.tg.wait_for(lambda: bot_messages(h.tg, OWNER_CHAT))
    await h.app.gateway.wait_idle()
    assert bot_messages(h.tg, OWNER_CHAT) == [DEFAULT.telegram_cannot_see]
    assert fake_llm.calls == 0
    assert h.tg.called("getFile") == []


async def test_a_photo_whose_turn_was_killed_is_answered_with_the_image_after_a_restart(
        fake_llm, tmp_path):
    """kill -9 while the photo's turn waits for the LLM: the inbox row holds the file id,
    and the next process fetches the photo again and sends it with the redone turn."""
    fake_llm.script(Hang(60), Reply(content="A fern, I'd say."))
    async with FakeTelegram() as tg:
        env = clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url,
                        VALET_LLM_MODEL="fake-model", VALET_TELEGRAM_TOKEN=TOKEN,
                        VALET_TELEGRAM_API_URL=tg.api_url)
        (tmp_path / "valet.yaml").write_text(
            "llm:\n  vision: true\nloop:\n  llm_max_retries: 0\n"
            "owner:\n  telegram_ids: ['42']\n")
        procs: list[asyncio.subprocess.Process] = []
        try:
            for attempt in range(2):
                env["VALET_HTTP_PORT"] = str(free_port())
                proc = await asyncio.create_subprocess_exec(
                    sys.executable, "-m", "bot", "serve", env=env, cwd=ROOT,
                    stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
                procs.append(proc)
                await _until_up(f"http://127.0.0.1:{env['VALET_HTTP_PORT']}/readyz", proc)
                if attempt == 0:
                    tg.user_sends_photo(42, "what plant?", sizes=[THUMB, PHOTO])
                    await tg.wait_for(lambda: fake_llm.calls == 1, timeout=30)
                    proc.kill()  # mid-turn: no reply was sent
                    await proc.wait()
                    assert tg.texts(42) == []
            await tg.wait_for(lambda: tg.texts(42), timeout=30)
            await asyncio.sleep(0.5)  # room for a wrong second answer to arrive
        finally:
            for proc in procs:
                if proc.returncode is None:
                    proc.kill()
                    await proc.wait()
    assert tg.texts(42) == ["A fern, I'd say."]
    assert fake_llm.images == [[("image/jpeg", PHOTO)], [("image/jpeg", PHOTO)]]
    assert said(fake_llm.requests[1]["messages"][-1]["content"])[0] == {"type": "text",
                                                                 "text": "what plant?"}
