"""`valet serve`: the long-running process, in one or more roles (bot.app.roles). One aiohttp
application carries the health checks and /metrics in every role; a web process adds every
channel's webhooks and POST /events; a worker process adds the owner's console. The parts the
roles run (turns, delivery, the approval sweeper, the scheduler) run beside it.

Started while its Postgres is away (a reboot, a restart during an outage) it listens anyway:
webhooks go to the spool, /readyz says why, and the parts start once the database is reached
(bot.db.pending: tried again with backoff).

On SIGTERM (or SIGINT) it stops taking new work (channels stop receiving; webhooks answer 503
so Telegram and Twilio send again later), lets running turns and their replies finish for
`http.shutdown_grace_seconds`, then stops; whatever is still unfinished stays in the inbox and
outbox and is picked up at the next start (or by another worker).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, Protocol

from aiohttp import web

from bot.app.channels import Hosts, ServedChannel, configured_channels
from bot.app.observe import Observed
from bot.app.owner import OWNER_ID
from bot.app.plane import Plane
from bot.app.roles import Roles
from bot.config import ConfigError, Settings
from bot.people.access import AccessControl
from bot.people.identity import IdentityStore
from bot.plumbing.background import cancel_and_wait
from bot.plumbing.spool import Spool
from bot.plumbing.startup import started
from channels.registry import specs
from triggers.event_store import StoredEventBus

if TYPE_CHECKING:
    from bot.app.root import App
    from bot.app.terminal import TerminalEndpoint

log = logging.getLogger(__name__)


class Served(Observed, Hosts, Protocol):
    """A `valet serve` process of any role: App (worker, scheduler, all) or Front (web)."""

    @property
    def roles(self) -> Roles: ...

    @property
    def access(self) -> AccessControl: ...

    @property
    def identities(self) -> IdentityStore: ...

    @property
    def events(self) -> StoredEventBus:
        """POST /events: stored, then the schedulers are told."""
        ...

    @property
    def plane(self) -> Plane | None: ...

    @property
    def whole(self) -> App | None:
        """The App with every part, when this process has one (the web console and the
        owner's terminal are built on all of it); None: the web role's Front."""
        ...

    async def ensure_owner(self) -> object: ...

    async def start(self) -> None: ...

    async def close(self) -> None: ...


def extra_routes(app: Served, env: Mapping[str, str] | None = None,
                 spool: Spool | None = None) -> list[web.RouteDef]:
    """Routes that are not a channel's: `POST /events` for the trigger engine (bearer token
    VALET_EVENTS_TOKEN; without one every request gets 401), kept in the spool while the
    database is away."""
    env = os.environ if env is None else env
    from bot.plumbing.request_body import BodyLimits
    from triggers.http import MAX_BODY, events_routes

    limits = BodyLimits(max_bytes=MAX_BODY,
                        timeout_seconds=app.settings.http.body_timeout_seconds)
    return events_routes(app.events, env.get("VALET_EVENTS_TOKEN") or None, limits,
                         spool=spool)


async def readiness(app: Served, channels: list[ServedChannel]) -> tuple[bool, dict[str, Any]]:
    """What /readyz answers: every part this process depends on, checked now, and for each
    that fails what is wrong (a channel's own words for what its receiving does)."""
    from bot.app.database import pending
    from bot.app.observe import database_reachable, redis_reachable

    receives = app.roles.web
    checks: dict[str, bool] = {"database": await database_reachable(app)}
    problems: dict[str, str] = {}
    redis = await redis_reachable(app)
    if redis is not None:
        checks["redis"] = redis
        if not redis:
            problems["redis"] = "Redis cannot be reached: no work moves between processes"
    outages = app.outbound.health.outages()
    for channel in channels if receives or app.roles.worker else []:
        # A web process receives on it; a worker sends on it (rejected credentials).
        checks[channel.name] = (channel.ready or not receives) \
            and channel.name not in outages
        if channel.name in outages:
            problems[channel.name] = outages[channel.name].reason
        elif not checks[channel.name]:
            problems[channel.name] = channel.status
    stream = app.plane.stream if app.plane is not None else None
    if app.roles.worker and stream is not None:
        checks["work stream"] = stream.claiming  # a worker that lost Redis claims nothing
    if not checks["database"]:
        waiting = pending(app.db)
        problems["database"] = "the database cannot be reached" + (
            f" ({waiting.waiting_for()}; Valet tries again and starts its parts once it is "
            "there)" if waiting is not None else "") + (
            "; webhooks are kept in the spool until it can" if receives else "")
    return all(checks.values()), {"checks": checks, "problems": problems}


def build_web_app(app: Served, channels: list[ServedChannel],
                  env: Mapping[str, str] | None = None,
                  spool: Spool | None = None) -> web.Application:
    from bot.app.observe import METRICS_TOKEN_ENV, metrics_routes, request_ids, webhook_counter

    env = os.environ if env is None else env
    receives = app.roles.web
    counter = webhook_counter(app.metrics, app.settings)
    web_app = web.Application(client_max_size=2 * 1024 * 1024,
                              middlewares=[request_ids, counter])

    async def healthz(_: web.Request) -> web.Response:
        return web.json_response({"status": "alive"})

    async def readyz(_: web.Request) -> web.Response:
        ready, said = await readiness(app, channels)
        if spool is not None:
            said["spooled"] = spool.count()  # webhooks waiting for the database
        return web.json_response({"ready": ready, **said}, status=200 if ready else 503)

    web_app.router.add_get("/healthz", healthz)
    web_app.router.add_get("/readyz", readyz)
    if receives:
        for channel in channels:
            web_app.router.add_routes(channel.routes())
        web_app.router.add_routes(extra_routes(app, env, spool))
    web_app.router.add_routes(metrics_routes(app, env.get(METRICS_TOKEN_ENV) or None))
    whole = app.whole
    if whole is None or not whole.roles.worker:
        if app.settings.console.enabled:
            log.info("valet serve: the web console is served by worker processes")
        return web_app
    from bot.app.console.web import add_console  # off unless console.enabled

    if add_console(web_app, whole, channels) is not None:
        log.info("valet serve: the web console is at %s/console (send /console for a "
                 "sign-in link)", app.settings.console_url())
    return web_app


def _service_logging(settings: Settings) -> None:
    """Start-up and shutdown lines always show (each channel's own too); request URLs never
    do (a channel's library may put its token in them: its spec's `quiet_loggers`)."""
    channels = specs(settings)
    for name in ("bot.app.serve", "bot.plumbing.outages", "bot.plumbing.spool", "bot.db.pending",
                 *(n for spec in channels for n in spec.loggers)):
        logger = logging.getLogger(name)
        logger.setLevel(min(logger.getEffectiveLevel(), logging.INFO))
    for name in ("httpx", "httpcore", *(n for spec in channels for n in spec.quiet_loggers)):
        logger = logging.getLogger(name)
        logger.setLevel(max(logger.getEffectiveLevel(), logging.WARNING))


async def serve(settings: Settings, stop: asyncio.Event | None = None, *,
                role: str | list[str] | None = None) -> int:
    from bot.app.roles import check_roles

    roles = Roles.of([role] if isinstance(role, str) else role)
    check_roles(settings, roles)
    _service_logging(settings)
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    app = await _build_served(settings, roles)
    channels: list[ServedChannel] = []
    runner: web.AppRunner | None = None
    terminal: TerminalEndpoint | None = None
    # A process that receives keeps webhooks here while the database is away (bot.plumbing.spool).
    spool = Spool(settings.data_dir() / "spool") if roles.web else None
    try:
        channels = await configured_channels(settings, app, spool=spool)
        whole = app.whole
        if whole is not None and whole.roles.everything:
            # The owner's `valet chat` beside the bot: the one process that runs every part
            # (with several, a reply to the terminal could be delivered by another worker).
            from bot.app.terminal import TerminalEndpoint

            terminal = TerminalEndpoint.build(whole)
        runner = web.AppRunner(build_web_app(app, channels, spool=spool), access_log=None)
        await runner.setup()
        port = await _listen(runner, settings.http.host, settings.http.port)
        log.info("valet serve (%s): listening on http://%s:%s (/healthz, /readyz)", roles,
                 settings.http.host, port)
        if await _database_reached(app, stop):  # else stopped first: nothing was started
            await _run_parts(app, channels, spool, terminal, stop)
    finally:
        await _close_served(app, channels, runner, terminal, spool)
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
    log.info("valet serve: stopped")
    return 0


async def _listen(runner: web.AppRunner, host: str, port: int) -> int:
    """The port listened on (the one the OS picked for `http.port: 0`). A port or address
    that cannot be had is the operator's to fix: one line, not a traceback."""
    try:
        await web.TCPSite(runner, host, port).start()
    except OSError as err:
        # asyncio words strerror with the address again: the system's own words, once
        why = (os.strerror(err.errno) if err.errno else str(err)).lower()
        raise ConfigError(f"http: cannot listen on {host}:{port}: {why} (another program, or "
                          "another valet serve, may be there: set http.port or "
                          "VALET_HTTP_PORT)") from None
    return int(runner.addresses[0][1])


async def _build_served(settings: Settings, roles: Roles) -> Served:
    """The parts this process's roles need: the web front alone, or the whole App."""
    from bot.app.roles import WEB, migrates_on_start

    migrate: bool | Literal["check"] = True if migrates_on_start(settings, roles) else "check"
    app: Served
    if roles.parts == {WEB}:  # no LLM client, no turn's parts (bot.app.front)
        from bot.app.front import Front

        app = await Front.build(settings, migrate=migrate)
    else:
        from bot.app.root import App

        app = await App.build(settings, migrate=migrate, roles=roles, serving=True)
    return app


async def _run_parts(app: Served, channels: list[ServedChannel], spool: Spool | None,
                     terminal: TerminalEndpoint | None, stop: asyncio.Event) -> None:
    """The parts started (the database is there), run until `stop`, then drained."""
    await app.start()
    await _start_channels(app, channels)
    if spool is not None:
        spool.start()  # what an earlier run kept is stored first
    if terminal is not None:
        await terminal.open()
    if app.roles.web:  # it knows how to reach each channel: the claim is said there
        await _claim_if_ownerless(app, channels)
    started()  # the collector runs again (bot.plumbing.startup)
    await stop.wait()
    await _drain(app, channels, app.settings.http.shutdown_grace_seconds)


async def _database_reached(app: Served, stop: asyncio.Event) -> bool:
    """Started while its Postgres was away (bot.db.pending): webhooks have been kept in the
    spool from the first second (the web server listens already); nothing else starts (no
    turn, no Telegram polling, no trigger) until the database is reached, its migrations
    applied, and the owner ensured. False when told to stop first."""
    from bot.app.database import pending

    waiting = pending(app.db)
    if waiting is None:
        return True
    log.warning("valet serve: started without its database; %s until it is reached",
                "webhooks are kept in the spool and everything else waits" if app.roles.web
                else "nothing starts")
    reach = asyncio.ensure_future(waiting.reach())
    stopped = asyncio.ensure_future(stop.wait())
    reached = False
    try:
        await asyncio.wait({reach, stopped}, return_when=asyncio.FIRST_COMPLETED)
        reached = reach.done()
    finally:
        stopped.cancel()
        if not reached:
            await cancel_and_wait(reach)
    if not reached:
        return False
    reach.result()  # a mistake found once the server answered (a wrong password) is raised
    await app.ensure_owner()
    return True


async def _close_served(app: Served, channels: list[ServedChannel],
                        runner: web.AppRunner | None, terminal: TerminalEndpoint | None,
                        spool: Spool | None) -> None:
    """Close what `serve` opened: the spool, the terminal, each channel, the web server, the
    app, in that order."""
    if spool is not None:
        await spool.stop()  # what it holds stays on disk for the next start
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


async def _claim_if_ownerless(app: Served, channels: list[ServedChannel]) -> None:
    """No owner address known: print the one-time claim code (bot.people.claims)."""
    from bot.app.owner import open_claim_if_ownerless

    reach = []
    found = specs(app.settings)
    for channel in channels:
        spec = found.named(channel.name)
        if spec is not None and spec.claim is not None:
            reach.append(spec.claim(channel, app.settings))
    assert app.access.claims is not None
    notice = await open_claim_if_ownerless(app.access.claims, app.identities, OWNER_ID, reach,
                                           app.clock.now())
    if notice:
        log.warning("valet serve: %s", notice)


async def _start_channels(app: Served, channels: list[ServedChannel]) -> None:
    """A receiving process starts its channels; a worker only prepares them (it sends)."""
    for channel in channels:
        if app.roles.web:
            await channel.start()
            paths = ", ".join(r.path for r in channel.routes()) or "no webhook"
            log.info("valet serve: channel %s started (%s)", channel.name, paths)
        elif app.roles.worker:
            await channel.prepare()
    if not channels:
        ways = " or ".join(s.turn_on for s in specs(app.settings) if s.build is not None)
        log.warning("valet serve: no channel configured (set %s)", ways)


async def _drain(app: Served, channels: list[ServedChannel], grace: float) -> None:
    """No new work; running turns and their replies get a bounded time to finish."""
    log.info("valet serve: stopping; finishing running turns (up to %.0fs)",
             grace)
    for channel in channels:
        if app.roles.web:
            await channel.stop()
    if not app.roles.worker:
        return
    try:
        await asyncio.wait_for(app.gateway.wait_idle(), grace)
    except TimeoutError:
        log.warning("valet serve: turns still running are left for the next start")
