"""`valet serve`: the long-running process. One aiohttp application carries the health checks
and every channel's webhooks; the app's gateway, outbox deliverer and approval sweeper run
beside it.

On SIGTERM (or SIGINT) it stops taking new work (channels stop receiving; webhooks answer 503
so Telegram and Twilio send again later), lets running turns and their replies finish for
`http.shutdown_grace_seconds`, then stops; whatever is still unfinished stays in the inbox and
outbox and is picked up at the next start.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import Mapping

from aiohttp import web

from bot.app.channels import ServedChannel, configured_channels
from bot.app.root import OWNER_ID, App
from bot.app.terminal import TerminalEndpoint
from bot.config import Settings

log = logging.getLogger(__name__)

def extra_routes(app: App, env: Mapping[str, str] | None = None) -> list[web.RouteDef]:
    """Routes that are not a channel's: `POST /events` for the trigger engine (bearer token
    VALET_EVENTS_TOKEN; without one every request gets 401)."""
    env = os.environ if env is None else env
    from bot.request_body import BodyLimits
    from triggers.http import MAX_BODY, events_routes

    limits = BodyLimits(max_bytes=MAX_BODY,
                        timeout_seconds=app.settings.http.body_timeout_seconds)
    return events_routes(app.triggers.bus, env.get("VALET_EVENTS_TOKEN") or None, limits)


def build_web_app(app: App, channels: list[ServedChannel],
                  env: Mapping[str, str] | None = None) -> web.Application:
    from bot.app.observe import (
        METRICS_TOKEN_ENV,
        database_reachable,
        metrics_routes,
        request_ids,
        webhook_counter,
    )

    env = os.environ if env is None else env
    counter = webhook_counter(app.metrics)
    web_app = web.Application(client_max_size=2 * 1024 * 1024,
                              middlewares=[request_ids, counter])

    async def healthz(_: web.Request) -> web.Response:
        return web.json_response({"status": "alive"})

    async def readyz(_: web.Request) -> web.Response:
        checks: dict[str, bool] = {"database": await database_reachable(app)}
        outages = app.outbound.health.outages()
        for channel in channels:
            checks[channel.name] = channel.ready and channel.name not in outages
        ready = all(checks.values())
        problems = {name: outage.reason for name, outage in outages.items()}
        return web.json_response({"ready": ready, "checks": checks, "problems": problems},
                                 status=200 if ready else 503)

    web_app.router.add_get("/healthz", healthz)
    web_app.router.add_get("/readyz", readyz)
    for channel in channels:
        web_app.router.add_routes(channel.routes())
    web_app.router.add_routes(extra_routes(app, env))
    web_app.router.add_routes(metrics_routes(app, env.get(METRICS_TOKEN_ENV) or None))
    from bot.app.console.web import add_console  # off unless console.enabled

    if add_console(web_app, app, channels) is not None:
        log.info("valet serve: the web console is at %s/console (send /console for a "
                 "sign-in link)", app.settings.console_url())
    return web_app


def _service_logging() -> None:
    """Start-up and shutdown lines always show; request URLs never do (a Telegram request
    URL contains the bot token)."""
    for name in ("bot.app.serve", "channels.telegram"):
        logger = logging.getLogger(name)
        logger.setLevel(min(logger.getEffectiveLevel(), logging.INFO))
    for name in ("httpx", "httpcore", "telegram"):
        logger = logging.getLogger(name)
        logger.setLevel(max(logger.getEffectiveLevel(), logging.WARNING))


async def serve(settings: Settings, stop: asyncio.Event | None = None, *,
                role: str = "all") -> int:
    from bot.app.roles import migrates_on_start

    _service_logging()
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    app = await App.build(settings, migrate=True if migrates_on_start(settings, role)
                          else "check")
    channels: list[ServedChannel] = []
    runner: web.AppRunner | None = None
    terminal: TerminalEndpoint | None = None
    try:
        channels = await configured_channels(settings, app)
        terminal = TerminalEndpoint.build(app)  # the owner's `valet chat` beside the bot
        runner = web.AppRunner(build_web_app(app, channels), access_log=None)
        await runner.setup()
        await web.TCPSite(runner, settings.http.host, settings.http.port).start()
        log.info("valet serve: listening on http://%s:%s (/healthz, /readyz)",
                 settings.http.host, settings.http.port)
        await app.start()
        for channel in channels:
            await channel.start()
            paths = ", ".join(r.path for r in channel.routes()
                              ) or "no webhook"
            log.info("valet serve: channel %s started (%s)", channel.name, paths)
        if not channels:
            log.warning("valet serve: no channel configured (set VALET_TELEGRAM_TOKEN or "
                        "VALET_TWILIO_ACCOUNT_SID)")
        await terminal.open()
        await _claim_if_ownerless(app, channels)
        await stop.wait()
        await _drain(app, channels, settings.http.shutdown_grace_seconds)
    finally:
        if terminal is not None:
            await terminal.close()
        for channel in channels:
            try:
                await channel.close()
            except Exception:
                log.exception("closing channel %s failed", channel.name)
        if runner is not None:
            await runner.cleanup()
        await app.close()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
    log.info("valet serve: stopped")
    return 0


async def _claim_if_ownerless(app: App, channels: list[ServedChannel]) -> None:
    """No owner address known: print the one-time claim code (bot.gateway.claims)."""
    from bot.app.owner import open_claim_if_ownerless

    reach = []
    for channel in channels:
        if channel.name == "telegram":
            bot = getattr(channel, "username", "") or "your bot"
            reach.append(f"send \"/start {{code}}\" to @{bot} on Telegram")
        elif channel.name == "sms":
            number = app.settings.sms.from_number or "Valet's Twilio number"
            reach.append(f"text {{code}} to {number} from your phone")
    assert app.access.claims is not None
    notice = await open_claim_if_ownerless(app.access.claims, app.identities, OWNER_ID, reach,
                                           app.clock.now())
    if notice:
        log.warning("valet serve: %s", notice)


async def _drain(app: App, channels: list[ServedChannel], grace: float) -> None:
    """No new work; running turns and their replies get a bounded time to finish."""
    log.info("valet serve: stopping; finishing running turns (up to %.0fs)",
             grace)
    for channel in channels:
        await channel.stop()
    try:
        await asyncio.wait_for(app.gateway.wait_idle(), grace)
    except TimeoutError:
        log.warning("valet serve: turns still running are left for the next start")
