"""SMS webhook acknowledgement: how long Twilio waits for its empty TwiML while signed messages
arrive at a sustained rate (goal: p99 < 50 ms at >= 200 requests/s).

This process runs the app (SQLite, then Postgres), the SMS webhooks on a real port, the fake
Twilio REST server the replies go to, and an LLM stand-in that takes 300 ms. A second process
(`python -m tests.bench.sms_webhook --load ...`) sends signed webhooks open-loop on a fixed
schedule (each request starts on time whether or not earlier ones were answered), so a slow
server shows up as latency, not as a lower rate. Every message is a real turn: inbox, access,
per-user queue, LLM, outbox, the twilio client.

Floor, same run: an aiohttp server that answers the same requests with the same empty TwiML
and does nothing else (what any Python web server pays). Goal: ack p99 < 50 ms at 200/s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from urllib.parse import urlencode

import aiohttp
from aiohttp import web

from bot.app import App
from bot.app.channels import served_channel
from bot.config import load_settings
from bot.config.channel_sections import SmsSettings
from bot.config.policies import AccessSettings, ChannelAccess
from channels.sms.channel import SmsChannel
from tests.bench.gateway import SleepyLLM
from tests.bench.size import sized
from tests.bench.stats import pct
from tests.fakes.fake_twilio import inbound_params, sign
from tests.servers import ThrowawayPostgres, find_pg_bin

RATE = int(os.environ.get("VALET_BENCH_SMS_RATE", sized(200, 20)))  # requests per second
SECONDS = sized(5, 1)
SENDERS = sized(100, 10)
GOAL_P99_MS = 50.0
PUBLIC_URL = "https://valet.example.com"
TOKEN = "bench-token"
SID = "AC" + "2" * 32


def _number(i: int) -> str:
    return f"+1212555{i:04d}"


async def _twilio_process() -> tuple[asyncio.subprocess.Process, str]:
    """The fake Twilio REST API in a process of its own: the real one is not on our CPU."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.fakes.fake_twilio", "--account-sid", SID,
        "--auth-token", TOKEN, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    port = int((await proc.stdout.readline()).decode().strip())
    return proc, f"http://127.0.0.1:{port}"


async def _serve(url: str, twilio_url: str, llm_seconds: float
                 ) -> tuple[App, SmsChannel, web.AppRunner, str]:
    settings = load_settings(None, env={"VALET_DATABASE_URL": url, "VALET_CONFIG": "/dev/null"})
    settings = settings.model_copy(update={
        "access": AccessSettings(channels={"sms": ChannelAccess(
            policy="allowlist", allow=[_number(i) for i in range(SENDERS)])}),
        "rate_limit_per_minute": 0, "public_url": PUBLIC_URL,
        "sms": SmsSettings(from_number="+15005550006")})
    app = await App.build(settings, llm=SleepyLLM(llm_seconds))
    channel = served_channel(app, "sms", env={
        "VALET_TWILIO_ACCOUNT_SID": SID, "VALET_TWILIO_AUTH_TOKEN": TOKEN,
        "VALET_TWILIO_API_URL": twilio_url})
    await app.start()
    runner = web.AppRunner(channel.web_app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return app, channel, runner, f"http://127.0.0.1:{port}/sms/inbound"


async def _send_load(endpoint: str) -> dict[str, object]:
    """The second process's results: latencies, errors, the rate it kept."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.bench.sms_webhook", "--load", endpoint,
        "--rate", str(RATE), "--seconds", str(SECONDS), stdout=subprocess.PIPE)
    out, _ = await proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"the load process failed (exit {proc.returncode})")
    result: dict[str, object] = json.loads(out)
    return result


async def _floor() -> list[str]:
    """The same load against a server that only answers with the empty TwiML."""
    async def answer(request: web.Request) -> web.Response:
        await request.post()
        return web.Response(text='<?xml version="1.0" encoding="UTF-8"?><Response/>',
                            content_type="application/xml")

    app = web.Application()
    app.router.add_post("/sms/inbound", answer)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        result = await _send_load(f"http://127.0.0.1:{port}/sms/inbound")
    finally:
        await runner.cleanup()
    times: list[float] = result["latencies_ms"]  # type: ignore[assignment]
    return [f"  {'floor':<13} {result['rate']:6.1f} req/s to a bare aiohttp handler: ack p50 "
            f"{pct(times, 50):6.2f} ms, p99 {pct(times, 99):6.2f} ms, max {max(times):6.1f} ms"]


async def _measure(url: str, label: str, *, parked: bool = False) -> list[str]:
    """parked: the LLM stand-in never answers within the run, so turns wait at the LLM and
    the numbers are the webhook's own (verify, inbox, access, queue), not the turns'."""
    twilio, twilio_url = await _twilio_process()
    app, channel, runner, endpoint = await _serve(url, twilio_url, 3600.0 if parked else 0.3)
    try:
        result = await _send_load(endpoint)
        if not parked:
            await asyncio.wait_for(app.gateway.wait_idle(), 120)
        times: list[float] = result["latencies_ms"]  # type: ignore[assignment]
        sent = await app.outbound.outbox.count("sent")
        rows = await app.db.fetch("SELECT status, COUNT(*) AS n FROM inbox GROUP BY status")
        inbox = ", ".join(f"{r['status']} {r['n']}" for r in rows)
        p99 = pct(times, 99)
        return [f"  {label:<13} {result['rate']:6.1f} signed req/s sustained over "
                f"{SECONDS} s (n={len(times)}, non-200: {result['errors']}): ack p50 "
                f"{pct(times, 50):6.2f} ms, p99 {p99:6.2f} ms, max "
                f"{max(times):6.1f} ms; inbox: {inbox}; replies sent {sent}; goal p99 < "
                f"{GOAL_P99_MS:.0f} ms: {'met' if p99 < GOAL_P99_MS else 'NOT MET'}"]
    finally:
        await runner.cleanup()
        await app.close()
        await channel.close()
        twilio.terminate()
        await twilio.wait()


async def run() -> list[str]:
    out = [f"SMS webhook acknowledgement (signed POST /sms/inbound, {RATE}/s from a second "
           "process; 'full': every message also a turn in the same process with a 300 ms "
           "LLM stand-in and the reply sent; 'ack': turns parked at the LLM)"]
    out += await _floor()
    with tempfile.TemporaryDirectory() as tmp:
        out += await _measure(f"sqlite:///{tmp}/ack.db", "SQLite ack", parked=True)
        out += await _measure(f"sqlite:///{tmp}/sms.db", "SQLite full")
    if find_pg_bin() is None:
        return [*out, "  Postgres: skipped (no server binaries)"]
    pg = ThrowawayPostgres().start()
    try:
        out += await _measure(pg.create_database("bench_ack"), "Postgres ack", parked=True)
        out += await _measure(pg.create_database("bench_sms"), "Postgres full")
    finally:
        pg.stop()
    return out


# --- the second process: signed requests on a fixed schedule ---------------------------------


async def _load(url: str, rate: float, seconds: float) -> dict[str, object]:
    # First contact creates each user: done before the clock starts (not the steady state).
    warm = [_request(i, f"warm{i}") for i in range(SENDERS)]
    total = int(rate * seconds)
    requests = [_request(i % SENDERS, f"m{i}") for i in range(total)]
    latencies: list[float] = []
    errors = 0
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http:
        for body, signature in warm:
            async with http.post(url, data=body, headers=_headers(signature)) as r:
                await r.read()
        await asyncio.sleep(1.0)  # let the first turns drain

        async def one(body: str, signature: str) -> None:
            nonlocal errors
            t0 = time.perf_counter()
            async with http.post(url, data=body, headers=_headers(signature)) as r:
                await r.read()
                if r.status != 200:
                    errors += 1
            latencies.append((time.perf_counter() - t0) * 1000)

        start = time.perf_counter()
        tasks = []
        for n, (body, signature) in enumerate(requests):
            delay = start + n / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(body, signature)))
        sent_in = time.perf_counter() - start
        await asyncio.gather(*tasks)
    return {"latencies_ms": latencies, "errors": errors, "rate": total / sent_in}


def _request(sender: int, tag: str) -> tuple[str, str]:
    params = inbound_params(_number(sender), f"hello {tag}", sid=f"SM{uuid.uuid4().hex}",
                            account_sid=SID)
    return urlencode(params), sign(TOKEN, PUBLIC_URL + "/sms/inbound", params)


def _headers(signature: str) -> dict[str, str]:
    return {"Content-Type": "application/x-www-form-urlencoded",
            "X-Twilio-Signature": signature}


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--load", required=True)
    parser.add_argument("--rate", type=float, default=RATE)
    parser.add_argument("--seconds", type=float, default=SECONDS)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(_load(args.load, args.rate, args.seconds))))
