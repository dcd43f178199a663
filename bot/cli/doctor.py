"""`valet doctor`: checks what Valet needs and says in plain words what is missing.

Nothing it prints carries a secret: URLs are shown with their credentials masked."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

from bot.app.database import MIGRATIONS, open_database
from bot.channel import MenuCommand
from bot.cli.doctor_costs import check_costs
from bot.cli.doctor_llm import CAP_FIELDS, capped_llm, check_llm, why
from bot.cli.doctor_setup import (
    check_data_directory,
    check_events_token,
    check_owner,
    check_public_url,
    check_secret_key,
)
from bot.cli.endpoint import check_endpoint
from bot.config import ConfigError, Settings
from bot.db import Database
from bot.db.migrate import apply_migrations, refuse_newer, schema_state
from bot.db.sqlite import file_of
from bot.llm.caps import background_work
from bot.llm.port import LLMError
from bot.plumbing.redis import RedisUnavailable, open_redis
from bot.setup.report import Report
from bot.text.redact import redact_text, redact_url
from bot.tools.capabilities import CapabilitySpec, CapabilityState, statuses
from channels.registry import specs

Say = Callable[[str], None]


async def run_doctor(settings: Settings, say: Say, *, fix: bool = False,
                     env: Mapping[str, str] | None = None) -> int:
    """Every check, one line each; 1 when any failed. `fix`: the safe repairs are made (the
    data directory, migrations, the Telegram webhook and menu) and each is said. Each check
    runs on its own (Report.guarded): one that raises is a FAIL line naming it, and the
    others still run."""
    # A line per migration (log_level: INFO) would bury the report, which says what it
    # applied in one line, and would contradict it for the stand-in schema a new database is
    # checked against.
    migrations = logging.getLogger("bot.db.migrate")
    level = migrations.level
    migrations.setLevel(max(level, logging.WARNING))
    try:
        return await _run_doctor(settings, say, fix=fix, env=env)
    finally:
        migrations.setLevel(level)


async def _run_doctor(settings: Settings, say: Say, *, fix: bool,
                      env: Mapping[str, str] | None) -> int:
    env = os.environ if env is None else env
    report = Report.of(say, env, fix=fix)
    say(f"configuration: {settings.source}")
    say(f"data directory: {settings.data_dir()}")
    say(f"chat log file: {settings.log_file()}")
    say(f"valet serve listens on: {settings.http.host}:{settings.http.port}")
    settings = _channels_loaded(settings, report)
    await report.guarded("data directory", lambda: check_data_directory(settings, report))
    await report.guarded("persona", lambda: _check_persona(settings, report))
    agents = await _check_agents(settings, report)
    await _check_stores(settings, agents, env, report)
    if settings.redis_url:
        await report.guarded("redis", lambda: _check_redis(settings.redis_url or "", report))
    await report.guarded("LLM", lambda: _check_models(settings, report))
    for spec in specs(settings):
        if spec.doctor is not None:
            await report.guarded(spec.title, partial(
                spec.doctor.check, settings, env, report, partial(_menu, settings, spec.name)))
    # what each channel may cost (SMS: where it may go), the allowance (doctor_costs)
    await report.guarded("costs", lambda: check_costs(settings, env, report))
    await report.guarded("public URL", lambda: check_public_url(settings, env, report))
    await report.guarded("events token", lambda: check_events_token(env, report))
    problems = report.problems
    say("all good" if not problems else f"{problems} problem(s) found")
    return 0 if not problems else 1


def _check_persona(settings: Settings, report: Report) -> None:
    from persona import load_persona

    try:
        channels = specs(settings)
        persona = load_persona(settings.persona, channels=channels.names(),
                               line_groups=channels.line_groups())
        report.ok(f"persona {persona.name!r} ({persona.source})")
    except ConfigError as err:
        report.bad(str(err))


async def _check_agents(settings: Settings, report: Report) -> Any:
    """The tool registry (None when it cannot be built: the line says why)."""
    from bot.app import build_agents

    try:
        agents = build_agents(settings)
    except Exception as err:
        report.bad(f"tools: {err}")
        return None
    report.ok(f"{len(agents.tools)} tools ({len(agents.agents)} agents) from "
              f"{', '.join(agents.files)}")
    return agents


async def _check_stores(settings: Settings, agents: Any, env: Mapping[str, str],
                        report: Report) -> None:
    """The database, then what is read from it: capabilities, MCP servers, mail accounts,
    the secret key, the owner."""
    opened: tuple[Database | None, Database | None] = (None, None)

    async def database() -> None:
        nonlocal opened
        opened = await _check_database(settings, report)

    await report.guarded("database", database)
    db, stand_in = opened
    try:
        if agents is not None:
            await report.guarded("capabilities", lambda: _check_capabilities(
                settings, agents.capabilities, report.say, report.bad, stand_in))
            await report.guarded("MCP servers", lambda: _check_mcp(
                settings, agents, report.say, report.ok, report.bad, stand_in))
        await report.guarded("email", lambda: _check_email(stand_in, report.ok, report.bad))
        await report.guarded("secret key", lambda: check_secret_key(env, stand_in, report))
        await report.guarded("owner", lambda: check_owner(settings, stand_in, report))
    finally:
        for each in {id(d): d for d in (db, stand_in) if d is not None}.values():
            await report.guarded("closing the database", each.close)


async def _check_models(settings: Settings, report: Report) -> None:
    from bot.app import NO_LLM_MESSAGE

    if not settings.llm.configured:
        report.bad(NO_LLM_MESSAGE)
        return
    llm = capped_llm(settings)  # every probe capped: a model that never stops is told so
    try:
        field = await check_llm(settings, llm, report.ok, report.bad, report.note)
        if field is not None and field != CAP_FIELDS[0]:  # the cap as this server names it
            await llm.close()
            llm = capped_llm(settings, field)
        if field is not None:
            await check_endpoint(settings, llm, report)  # what it does (bot/cli/endpoint.py)
    finally:
        await llm.close()
    await report.guarded("fallback LLMs", lambda: _check_fallbacks(settings, report.ok,
                                                                   report.bad))


def _channels_loaded(settings: Settings, report: Report) -> Settings:
    """The channels `channel_modules:` adds, loaded once: one that cannot be is a FAIL line,
    and the other checks go on with Valet's own channels."""
    try:
        specs(settings)
    except ConfigError as err:
        report.bad(str(err))
        return settings.model_copy(update={"channel_modules": []})
    return settings


async def _menu(settings: Settings, channel: str) -> list[MenuCommand]:
    """The command table's menu for a channel, as `valet serve` sets it (the app built
    without an LLM, as the admin commands build it)."""
    from bot.app import App
    from bot.cli.admin import _NoLLM

    app = await App.build(settings, llm=_NoLLM())
    try:
        return app.commands.menu(channel)
    finally:
        await app.close()


async def _check_database(settings: Settings, report: Report
                          ) -> tuple[Database | None, Database | None]:
    """The database (reached, its schema), and the one the other checks read: itself once
    its schema is complete; for a new one (nothing applied yet) an empty stand-in in memory,
    which is what it will hold. Nothing is changed without --fix."""
    where = redact_url(settings.database_url)
    url = settings.database_url
    if url.startswith("sqlite:///") and not url.endswith(":memory:") and not report.fix \
            and not await asyncio.to_thread(Path(file_of(url)).exists):
        report.note(f"database {where} does not exist yet (created at first start; --fix "
                    "creates it now)")
        return None, await open_database("sqlite:///:memory:")
    try:
        db = await open_database(url, migrate=False)
    except Exception as err:
        report.bad(f"database {where}: {err}")
        return None, None
    try:
        state = await schema_state(db, MIGRATIONS)
        refuse_newer(state, where, MIGRATIONS)
    except Exception as err:
        report.bad(f"database {where}: {err}")
        return db, None
    if state.pending and report.fix:
        applied = await apply_migrations(db, MIGRATIONS)
        report.did(f"applied {len(applied)} migration(s) to {where}")
    elif state.pending:
        report.ok(f"database {where}")
        report.note(f"{len(state.pending)} migration(s) to apply (valet serve and valet chat "
                    "apply them at start; --fix or `valet migrate` applies them now)")
        if state.applied:
            return db, None  # part of it: the checks that read it would be guessing
        return db, await open_database("sqlite:///:memory:")
    else:
        report.ok(f"database {where} (schema version {state.version})")
    return db, db


async def _check_capabilities(settings: Settings, specs: Mapping[str, CapabilitySpec],
                              say: Say, bad: Say, db: Database | None) -> None:
    """Each capability: on, off (and what would turn it on) or failing (and why)."""
    found = await statuses(specs.values(), settings, db)
    for name, status in found.items():
        detail = redact_text(status.detail)
        if status.state is CapabilityState.FAILING:
            bad(f"capability {name}: failing: {detail}")
        elif status.state is CapabilityState.OFF:
            say(f"  off   capability {name}: to turn it on, {detail}")
        else:
            say(f"  on    capability {name}" + (f" ({detail})" if detail else ""))


async def _check_mcp(settings: Settings, agents: Any, say: Say, ok: Say, bad: Say,
                     db: Database | None) -> None:
    """Each MCP server: started (with its secrets), its tools and their policy; stopped."""
    from agents.mcp.report import probe, server_line, tool_line

    servers = agents.mcp_servers
    if not servers:
        return
    for name, source in servers.items():
        status = await source.attach(settings, db)
        if status.state is not CapabilityState.ON:
            say(f"  off   MCP server {name}: {redact_text(status.detail)}")
            continue
        found = await probe(source)
        if not found.started:
            bad(f"MCP server {server_line(source)} does not start: {found.error}")
            continue
        ok(f"MCP server {server_line(source)} starts: {len(found.tools)} tool(s)")
        for tool in found.tools:
            say(f"          {redact_text(tool_line(tool))}")
        for unknown in found.unknown_policies:
            say(f"          note: a policy is set for {unknown!r}, which it does not offer")


async def _check_email(db: Database | None, ok: Say, bad: Say) -> None:
    """Each connected mail account: IMAP and SMTP reachable, logins accepted."""
    from agents.email.checks import check_connected

    if db is None:
        return  # the database check above already said why
    try:
        checks = await check_connected(db, os.environ)
    except Exception as err:  # a bad key: the capability line says so too
        bad(f"email: {err}")
        return
    for check in checks:
        (ok if check.ok else bad)(check.text)


async def _check_redis(url: str, report: Report) -> None:
    try:
        client = await open_redis(url)
        await client.aclose()
        report.ok(f"redis {redact_url(url)}")
    except RedisUnavailable as err:
        report.bad(str(err))


async def _check_fallbacks(settings: Settings, ok: Say, bad: Say) -> None:
    """Each of `llm.fallback_models` answers one short request."""
    from bot.app.models import build_fallbacks
    from bot.plumbing.metrics import Metrics

    for slot, fallback in zip(build_fallbacks(settings, Metrics()),
                              settings.llm.fallback_models, strict=True):
        where = redact_url(fallback.base_url or settings.llm.base_url or "OpenAI")
        try:
            with background_work():  # a probe: the small cap
                await slot.llm.complete(
                    [{"role": "user", "content": "Reply with the single word: ready"}], None)
            ok(f"fallback LLM {fallback.model} at {where} answered (provider {slot.provider})")
        except LLMError as err:
            bad(f"fallback LLM {fallback.model} at {where} did not answer: "
                f"{why(err, settings, fallback.base_url or settings.llm.base_url)[:200]}")
        finally:
            await slot.llm.close()


