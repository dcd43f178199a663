"""The web console in a real headless Chromium (Debian's `chromium`, driven by Playwright),
against `valet serve`'s web app with Telegram (the fake Bot API server) and SMS (the fake
Twilio server) as channels: the owner signs in with the link sent to their Telegram chat,
approves a pending action (it runs once and the Telegram card is edited), pauses a task, sees
a dead-lettered SMS and sends it again, and lets a stranger in. Every page is photographed at
a desktop and a phone width (tests/artifacts/console/, not committed) and must fit the phone
without sideways scrolling."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from aiohttp import web

from bot.app.channels import served_channel
from bot.app.serve import build_web_app
from tests.e2e.telegram_harness import OWNER_CHAT, bot_messages
from tests.fakes import risky_tools
from tests.fakes.fake_openai import Reply, ToolCall
from tests.fakes.fake_twilio import FakeTwilio
from tests.integration.sms_harness import ACCOUNT_SID, ALICE, AUTH_TOKEN, FROM_NUMBER, sms_env

CHROMIUM = "/usr/bin/chromium"
# As the machine notes say: no sandbox as root, and none of Chromium's own traffic (the
# network is closed; its background connections would only fail).
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts" / "console"
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
PAGES = ("/console", "/console/approvals", "/console/tasks", "/console/usage",
         "/console/outbox", "/console/people", "/console/health")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path(CHROMIUM).exists(),
                       reason=f"no Chromium at {CHROMIUM} (apt-get install chromium; "
                              "tests/ci_services.sh installs it)"),
]


def configure(tmp_path: Path) -> None:
    """send_email needs approval; the console is on; a message that fails once is
    dead-lettered (so the story has one to retry)."""
    registry = tmp_path / "risky.yaml"
    registry.write_text("tools:\n  - module: tests.fakes.risky_tools\n    only: [send_email]\n"
                        "    approval: always\n")
    (tmp_path / "valet.yaml").write_text(
        f"loop:\n  llm_retry_base_delay: 0.01\nagents:\n  registries: [{registry}]\n"
        "  answer_check: heuristic\nowner:\n  telegram_ids: ['42']\n"
        "tool_exposure: all\nmemory:\n  enabled: false\n"
        "delivery:\n  max_attempts: 1\n"
        f"public_url: https://valet.example.com\nsms:\n  from_number: '{FROM_NUMBER}'\n"
        "console:\n  enabled: true\n")


async def test_the_owner_runs_the_household_from_a_browser(start_telegram, fake_llm,
                                                           tmp_path):
    from playwright.async_api import async_playwright, expect

    risky_tools.SENT.clear()
    configure(tmp_path)
    h = await start_telegram()
    app, tg = h.app, h.tg
    async with FakeTwilio(ACCOUNT_SID, AUTH_TOKEN) as twilio:
        sms = served_channel(app, "sms", env=sms_env(twilio))
        runner = web.AppRunner(build_web_app(app, [h.service], env={}), access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        base = f"http://127.0.0.1:{runner.addresses[0][1]}"
        app.settings.console.url = base  # where this browser reaches it
        try:
            async with async_playwright() as pw:
                browser = await pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
                try:
                    page = await browser.new_page(viewport=DESKTOP)
                    await _story(app, tg, twilio, fake_llm, page, expect)
                    await _something_on_every_page(app, tg, twilio, fake_llm)
                    await _photographs(page, base)
                finally:
                    await browser.close()
        finally:
            await runner.cleanup()
            await sms.close()  # its Twilio client's session


async def _story(app, tg, twilio, fake_llm, page, expect) -> None:  # type: ignore[no-untyped-def]
    from triggers.service import Owner

    # 1. Sign in with the link Valet sends to the owner's own Telegram chat.
    tg.user_says(OWNER_CHAT, "/console")
    await tg.wait_for(lambda: any("/console/login" in t for t in bot_messages(tg, OWNER_CHAT)))
    text = next(t for t in bot_messages(tg, OWNER_CHAT) if "/console/login" in t)
    link = re.search(r"https?://\S+/console/login\?t=[\w-]+", text)
    assert link, text
    await page.goto(link.group(0))
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.get_by_role("heading", level=1, name="Overview")).to_be_visible()

    # 2. A pending action, approved in the console: it runs once; the Telegram card says so.
    fake_llm.script(Reply(tool_calls=[ToolCall("send_email", {
        "to": "team@corp.example", "subject": "Q3", "body": "Numbers attached."})]))
    tg.user_says(OWNER_CHAT, "email the team about Q3")
    await tg.wait_for(lambda: any(m.buttons for m in tg.sent(OWNER_CHAT)))
    [card] = [m for m in tg.sent(OWNER_CHAT) if m.buttons]
    await app.gateway.wait_idle()
    await page.goto(page.url.split("/console")[0] + "/console/approvals")
    # Every argument is shown, in full.
    await expect(page.get_by_text("Numbers attached.", exact=True)).to_be_visible()
    fake_llm.script(Reply(content="The email to the team about Q3 went out."))
    await page.get_by_role("button", name="Approve").click()
    await expect(page.get_by_role("status")).to_contain_text("Approved")
    assert [e["to"] for e in risky_tools.SENT] == ["team@corp.example"]
    await tg.wait_for(lambda: not card.buttons, timeout=30)
    assert "Done: send email" in card.text
    # The conversation hears it at once, as after a tap on the card.
    await tg.wait_for(lambda: "The email to the team about Q3 went out."
                      in bot_messages(tg, OWNER_CHAT), timeout=30)

    # 3. Pause a task.
    owner = await app.ensure_owner()
    task = await app.triggers.service.morning_summary(Owner(owner.id, owner.timezone))
    await page.get_by_role("link", name="Tasks").click()
    await page.get_by_role("button", name="Pause: Morning summary").click()
    await expect(page.get_by_role("status")).to_contain_text("Paused “Morning summary”")
    assert (await app.triggers.service.store.get(task.id)).status.value == "paused"

    # 4. An SMS that Twilio refused is dead-lettered; the owner sees why and sends it again.
    alice = await app.identities.create_user("sms", ALICE, display_name="Alice",
                                             default_timezone="America/New_York",
                                             at=app.clock.now())
    twilio.fail_next(503)
    await app.outbound.notify_user(alice, "Your table at Luigi's is booked for 8pm.",
                                   dedupe_key="booking")
    await _until(lambda: _dead(app))
    await page.get_by_role("link", name="Outbox").click()
    await expect(page.get_by_text("Twilio answered HTTP 503")).to_be_visible()
    await page.get_by_role("button", name=re.compile("Retry message")).click()
    await expect(page.get_by_role("status")).to_contain_text("queued again")
    await twilio.wait_for(1, timeout=10)
    assert twilio.bodies_to(ALICE) == ["Your table at Luigi's is booked for 8pm."]

    # 5. A stranger asks to be let in; the owner approves from the People page.
    tg.user_says(777, "hello?", sender=777)
    await _until(lambda: _pairings(app))
    await page.get_by_role("link", name="People").click()
    await page.get_by_role("button", name=re.compile("^Let .* in$")).click()
    await expect(page.get_by_role("status")).to_contain_text("Approved")
    await tg.wait_for(lambda: any("You're in" in t for t in bot_messages(tg, 777)), timeout=30)
    assert await app.identities.resolve("telegram", "777") is not None


async def _something_on_every_page(app, tg, twilio, fake_llm  # type: ignore[no-untyped-def]
                                   ) -> None:
    """For the photographs: an action waiting, a dead letter, a stranger at the door."""
    fake_llm.script(Reply(tool_calls=[ToolCall("send_email", {
        "to": "school@example.org", "subject": "Ana is ill today",
        "body": "Ana has a fever and stays home today. Kind regards."})]))
    tg.user_says(OWNER_CHAT, "tell the school Ana is ill")
    await tg.wait_for(lambda: len([m for m in tg.sent(OWNER_CHAT) if m.buttons]) == 1)
    alice = await app.identities.resolve("sms", ALICE)
    twilio.fail_next(503)
    await app.outbound.notify_user(alice, "Reminder: dentist at 4pm.", dedupe_key="dentist")
    await _until(lambda: _dead(app))
    tg.user_says(888, "hi, it's Grandma", sender=888)
    await _until(lambda: _pairings(app))
    await app.gateway.wait_idle()


async def _photographs(page, base: str) -> None:  # type: ignore[no-untyped-def]
    """Every page at both widths; on the phone nothing may need sideways scrolling."""
    shutil.rmtree(ARTIFACTS, ignore_errors=True)
    ARTIFACTS.mkdir(parents=True)
    for label, size in (("desktop", DESKTOP), ("phone", PHONE)):
        await page.set_viewport_size(size)
        for path in PAGES:
            await page.goto(base + path)
            name = path.strip("/").replace("/", "-")
            await page.screenshot(path=str(ARTIFACTS / f"{name}-{label}.png"), full_page=True)
            if label == "phone":
                wide = await page.evaluate("document.documentElement.scrollWidth")
                assert wide <= size["width"], f"{path} is {wide}px wide on a phone"
    assert len(list(ARTIFACTS.glob("*.png"))) == 2 * len(PAGES)


async def _dead(app) -> bool:  # type: ignore[no-untyped-def]
    return bool(await app.outbound.outbox.dead_by_channel())


async def _pairings(app) -> bool:  # type: ignore[no-untyped-def]
    return bool(await app.access.list_pairings(app.clock.now()))


async def _until(check, timeout: float = 15.0) -> None:  # type: ignore[no-untyped-def]
    import asyncio

    for _ in range(int(timeout / 0.05)):
        if await check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"not true within {timeout}s: {check.__name__}")
