"""Built-in tools (clock, calculator, web_fetch), called directly and through run_tool_call.

No network beyond 127.0.0.1: web_fetch talks to a local aiohttp server, and "DNS" answers for
made-up names come from a fake resolver.
"""

from __future__ import annotations

import asyncio
import gzip
import ipaddress
import json
import socket
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from agents.tools import calculator, clock, web_fetch
from agents.tools.calculator import calculate
from agents.tools.clock import convert_time, current_time
from agents.tools.html_text import html_to_text
from agents.tools.web_fetch import FetchRefused, GuardedResolver, address_problem
from bot.contracts.clock import FakeClock
from bot.contracts.tool_context import ToolExecutionContext
from bot.llm.port import ToolCall
from bot.text.untrusted import quote_untrusted
from bot.tools.calls import run_tool_call
from bot.tools.registry import ToolOutcome, ToolRegistry, ToolStatus
from tests.ports import free_port


def make_ctx(when: datetime | None = None, timezone: str = "America/New_York",
             settings: dict[str, Any] | None = None) -> ToolExecutionContext:
    return ToolExecutionContext(user_id="u1", timezone=timezone, clock=FakeClock(when),
                                settings=settings or {})


async def call(fn: Any, arguments: dict[str, Any] | str, ctx: ToolExecutionContext | None = None,
               settings: dict[str, Any] | None = None) -> ToolOutcome:
    """Run `fn` the way the loop does. Tool settings live on the Tool (the loop hands them to
    the call's context), so a per-test copy carries them."""
    found = fn.__valet_tool__
    if settings is not None:
        found = replace(found, settings=settings)
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return await run_tool_call(ToolRegistry([found]), ToolCall("c1", found.name, raw),
                               ctx or make_ctx(), timeout=5)


# --- schemas, as the LLM sees them -------------------------------------------------------------

def test_schemas() -> None:
    schema = calculate.__valet_tool__.schema()
    assert schema["type"] == "function"
    fn = schema["function"]
    assert fn["name"] == "calculate"
    assert fn["description"].startswith("Evaluate an arithmetic expression")
    assert "^" in fn["description"] and "Args:" not in fn["description"]
    assert fn["parameters"]["required"] == ["expression"]
    assert fn["parameters"]["properties"]["expression"]["type"] == "string"
    assert "title" not in json.dumps(schema)

    fn = current_time.__valet_tool__.schema()["function"]
    assert fn["name"] == "current_time"
    assert list(fn["parameters"]["properties"]) == ["timezone"]  # ctx is not in the schema
    assert "required" not in fn["parameters"]
    assert "Europe/Paris" in fn["parameters"]["properties"]["timezone"]["description"]

    fn = convert_time.__valet_tool__.schema()["function"]
    assert fn["parameters"]["required"] == ["time", "to_timezone"]

    fn = web_fetch.web_fetch.__valet_tool__.schema()["function"]
    assert fn["name"] == "web_fetch"
    props = fn["parameters"]["properties"]
    assert set(props) == {"url", "max_chars"}
    assert fn["parameters"]["required"] == ["url"]
    assert props["max_chars"] == {"default": 20000, "type": "integer",
                                  "description": props["max_chars"]["description"]}
    for module in (calculator, clock, web_fetch):
        for t in ToolRegistry([f.__valet_tool__ for f in vars(module).values()
                               if hasattr(f, "__valet_tool__")]):
            assert t.description and t.context_param in (None, "ctx")


# --- calculator --------------------------------------------------------------------------------

@pytest.mark.parametrize(("expression", "expected"), [
    ("2+2", "2 + 2 = 4"),
    ("2 + 3 * 4", "2 + 3 * 4 = 14"),
    ("(2 + 3) * 4", "(2 + 3) * 4 = 20"),
    ("10 - 4 - 3", "10 - 4 - 3 = 3"),
    ("-3 + +5", "-3 + +5 = 2"),
    ("--5", "--5 = 5"),
    ("-2**2", "-2 ** 2 = -4"),
    ("2^10", "2 ** 10 = 1024"),
    ("2^3^2", "2 ** 3 ** 2 = 512"),
    ("7 // 2", "7 // 2 = 3"),
    ("-7 % 3", "-7 % 3 = 2"),
    ("10 / 4", "10 / 4 = 2.5"),
    ("10 / 2", "10 / 2 = 5"),
    ("1 / 3", "1 / 3 = 0.333333333333333"),
    ("0.1 + 0.2", "0.1 + 0.2 = 0.3"),
    ("2 ** -2", "2 ** (-2) = 0.25"),
    ("sqrt(16)", "sqrt(16) = 4"),
    ("abs(-3.5)", "abs(-3.5) = 3.5"),
    ("round(2.5)", "round(2.5) = 3"),
    ("round(2.675, 2)", "round(2.675, 2) = 2.68"),
    ("round(1234, -2)", "round(1234, -2) = 1200"),
    ("min(3, 1, 2)", "min(3, 1, 2) = 1"),
    ("max(4)", "max(4) = 4"),
    ("floor(-2.5) + ceil(2.1)", "floor(-2.5) + ceil(2.1) = 0"),
    ("log(100, 10)", "log(100, 10) = 2"),
    ("log(e)", "log(e) = 1"),
    ("sin(pi / 2) + cos(0) + tan(0)", "sin(pi / 2) + cos(0) + tan(0) = 2"),
    ("1,234.5 * 2", "1234.5 * 2 = 2469"),
    ("12,345,678", "12345678 = 12345678"),
    ("max(1, 234)", "max(1, 234) = 234"),
    ("3 × 4 ÷ 2 − 1", "3 * 4 / 2 - 1 = 5"),
    ("2x3", "2 * 3 = 6"),
    ("(1+1) x (2+2)", "(1 + 1) * (2 + 2) = 8"),
    ("0x10", "16 = 16"),
    ("π", "pi = 3.14159265358979"),
    ("10**16", "10 ** 16 = 10000000000000000 (about 1.000000e+16)"),
])
async def test_calculate(expression: str, expected: str) -> None:
    assert await calculate(expression) == expected


@pytest.mark.parametrize(("expression", "message"), [
    ("9**9**9", "too large"),
    ("2**5000", "too large"),
    ("10**300 * 10**300", "too large"),
    ("1e308 * 10", "too large"),
    ("2.0 ** 5000", "too large"),
    ("1/0", "division by zero"),
    ("5 % 0", "division by zero"),
    ("5 // 0.0", "division by zero"),
    ("0 ** -1", "division by zero"),
    ("sqrt(-1)", "math domain error"),
    ("log(0)", "math domain error"),
    ("(-8) ** (1/3)", "not a real number"),
    ("x + 1", "unknown name 'x'"),
    ("__builtins__", "unknown name"),
    ("__import__('os').system('echo hi')", "unknown function"),
    ("__import__('os')", "unknown function '__import__'"),
    ("exec('1')", "unknown function 'exec'"),
    ("math.sqrt(4)", "unknown function 'math.sqrt'"),
    ("(1).real", "attribute"),
    ("().__class__.__bases__", "attribute"),
    ("'abc'", "only numbers"),
    ("'a' * 10", "only numbers"),
    ("True + 1", "only numbers"),
    ("1j * 2", "only numbers"),
    ("[1, 2]", "list"),
    ("[1][0]", "subscript"),
    ("1, 23", "tuple"),
    ("lambda: 1", "lambda"),
    ("1 if 1 else 2", "ifexp"),
    ("1 < 2", "compare"),
    ("max(*[1, 2])", "positional arguments only"),
    ("round(1.5, ndigits=1)", "positional arguments only"),
    ("sqrt(1, 2)", "takes 1 argument"),
    ("min()", "1 or more"),
    ("round(1.5, 0.5)", "whole number"),
    ("2 +", "cannot parse"),
    ("", "empty expression"),
    ("1+" * 300 + "1", "too long"),
    ("(" * 210 + "1" + ")" * 210, "cannot parse"),
])
async def test_calculate_refuses(expression: str, message: str) -> None:
    with pytest.raises(ValueError) as info:
        await calculate(expression)
    assert message in str(info.value)


async def test_calculate_big_exponent_is_refused_quickly() -> None:
    loop = asyncio.get_running_loop()
    started = loop.time()
    outcome = await call(calculate, {"expression": "9**9**9**9"})
    assert outcome.status is ToolStatus.FAILED
    assert loop.time() - started < 1


async def test_calculate_through_run_tool_call() -> None:
    outcome = await call(calculate, {"expression": "2+2"})
    assert (outcome.status, outcome.content) == (ToolStatus.SUCCESS, "2 + 2 = 4")
    outcome = await call(calculate, {"expression": "1/0"})
    assert outcome.status is ToolStatus.FAILED
    assert outcome.content == "Error: ValueError: division by zero in '1/0'"
    outcome = await call(calculate, {"expression": "__import__('os').getcwd()"})
    assert outcome.status is ToolStatus.FAILED and "unknown function" in outcome.content
    outcome = await call(calculate, {})
    assert outcome.status is ToolStatus.INVALID and "expression" in outcome.content


# --- clock -------------------------------------------------------------------------------------

async def test_current_time_in_user_zone() -> None:
    ctx = make_ctx(datetime(2026, 1, 5, 9, 0, tzinfo=UTC))
    text = await current_time(ctx)
    assert text == ("Monday 5 January 2026, 04:00 (4:00 AM) EST (UTC-05:00), America/New_York\n"
                    "ISO 8601: 2026-01-05T04:00:00-05:00")
    outcome = await call(current_time, "", ctx)  # no arguments at all
    assert (outcome.status, outcome.content) == (ToolStatus.SUCCESS, text)


async def test_current_time_other_zone_and_dst() -> None:
    summer = make_ctx(datetime(2026, 7, 1, 12, 30, 15, 999, tzinfo=UTC))
    assert (await current_time(summer)).endswith("ISO 8601: 2026-07-01T08:30:15-04:00")
    assert "EDT (UTC-04:00)" in await current_time(summer)
    assert "Wednesday 1 July 2026, 14:30 (2:30 PM) CEST (UTC+02:00), Europe/Paris" in (
        await current_time(summer, "Europe/Paris"))
    assert "(UTC+05:30), Asia/Kolkata" in await current_time(summer, "Asia/Kolkata")
    assert "UTC+00:00" in await current_time(summer, "UTC")
    # New York springs forward at 07:00 UTC on Sunday 8 March 2026: 01:59 EST -> 03:00 EDT.
    before = await current_time(make_ctx(datetime(2026, 3, 8, 6, 59, tzinfo=UTC)))
    after = await current_time(make_ctx(datetime(2026, 3, 8, 7, 0, tzinfo=UTC)))
    assert "Sunday 8 March 2026, 01:59 (1:59 AM) EST" in before
    assert "Sunday 8 March 2026, 03:00 (3:00 AM) EDT" in after
    # ...and falls back on 1 November 2026: 01:30 happens twice, the offset tells them apart.
    first = await current_time(make_ctx(datetime(2026, 11, 1, 5, 30, tzinfo=UTC)))
    second = await current_time(make_ctx(datetime(2026, 11, 1, 6, 30, tzinfo=UTC)))
    assert "01:30:00-04:00" in first and "01:30:00-05:00" in second


async def test_current_time_unknown_zone() -> None:
    ctx = make_ctx()
    assert "Europe/Paris" in await current_time(ctx, "europe/paris")  # wrong case is fine
    with pytest.raises(ValueError, match="unknown timezone 'Mars/Olympus'") as info:
        await current_time(ctx, "Mars/Olympus")
    assert "Europe/Paris" in str(info.value)
    with pytest.raises(ValueError, match="Did you mean: Europe/Paris"):
        await current_time(ctx, "Europe/Pariss")
    for bad in ("../../etc/passwd", "/etc/localtime", ""):
        with pytest.raises(ValueError, match="unknown timezone"):
            await current_time(ctx, bad or " ")
    outcome = await call(current_time, {"timezone": "Nowhere/Town"}, ctx)
    assert outcome.status is ToolStatus.FAILED
    assert "unknown timezone 'Nowhere/Town'" in outcome.content
    assert "Europe/Paris" in outcome.content


async def test_convert_time() -> None:
    ctx = make_ctx(datetime(2026, 7, 1, 12, 0, tzinfo=UTC))
    text = await convert_time(ctx, "15:30", "Asia/Tokyo")
    assert "Wednesday 1 July 2026, 15:30 (3:30 PM) EDT" in text
    assert "= Thursday 2 July 2026, 04:30 (4:30 AM) JST (UTC+09:00), Asia/Tokyo" in text
    text = await convert_time(ctx, "2026-01-10 9am", "America/New_York", "Europe/London")
    assert "09:00 (9:00 AM) GMT" in text and "04:00 (4:00 AM) EST" in text
    text = await convert_time(ctx, "2026-03-08 02:30", "UTC")
    assert "does not exist" in text and "03:30 EDT" in text
    text = await convert_time(ctx, "2026-11-01 01:30", "UTC")
    assert "happens twice" in text and "05:30" in text
    with pytest.raises(ValueError, match="cannot read the time"):
        await convert_time(ctx, "teatime", "UTC")
    outcome = await call(convert_time, {"time": "12:00", "to_timezone": "Asia/Kolkata"}, ctx)
    assert outcome.status is ToolStatus.SUCCESS and "21:30" in outcome.content


# --- web_fetch: address policy -----------------------------------------------------------------

@pytest.mark.parametrize(("address", "problem"), [
    ("127.0.0.1", "loopback"), ("127.8.9.10", "loopback"), ("::1", "loopback"),
    ("10.1.2.3", "private"), ("172.16.0.1", "private"), ("192.168.1.1", "private"),
    ("169.254.169.254", "link-local"), ("fe80::1", "link-local"), ("fc00::1", "private"),
    ("224.0.0.1", "multicast"), ("ff02::1", "multicast"), ("0.0.0.0", "unspecified"),
    ("::", "unspecified"), ("240.0.0.1", "reserved"), ("100.64.0.1", "non-public"),
    ("::ffff:127.0.0.1", "loopback"), ("::ffff:10.0.0.1", "private"),
    ("::ffff:169.254.169.254", "link-local"), ("2002:7f00:1::", "loopback"),
    ("64:ff9b::a00:1", "private"),
    ("93.184.215.14", None), ("8.8.8.8", None), ("2606:4700:4700::1111", None),
    ("::ffff:8.8.8.8", None),
])
def test_address_problem(address: str, problem: str | None) -> None:
    found = address_problem(ipaddress.ip_address(address))
    assert (found is None) if problem is None else (found is not None and problem in found)


class FakeResolver:
    """A resolver answering every name with fixed addresses: no real DNS in tests."""

    answers: tuple[str, ...] = ("127.0.0.1",)

    async def resolve(self, host: str, port: int = 0,
                      family: socket.AddressFamily = socket.AF_INET) -> list[dict[str, Any]]:
        return [{"hostname": host, "host": address, "port": port,
                 "family": socket.AF_INET6 if ":" in address else socket.AF_INET,
                 "proto": 0, "flags": 0} for address in self.answers]

    async def close(self) -> None:
        pass


async def test_guarded_resolver_filters_answers() -> None:
    inner = FakeResolver()
    inner.answers = ("127.0.0.1", "93.184.215.14", "::ffff:10.0.0.1")
    resolver = GuardedResolver(inner=inner)  # type: ignore[arg-type]
    assert [r["host"] for r in await resolver.resolve("mixed.example", 80)] == ["93.184.215.14"]
    inner.answers = ("10.0.0.7", "::1")
    with pytest.raises(FetchRefused, match=r"inside\.example resolves to 10\.0\.0\.7 \(private"):
        await resolver.resolve("inside.example", 80)
    allowed = GuardedResolver(frozenset({"inside.example"}), inner)  # type: ignore[arg-type]
    assert len(await allowed.resolve("Inside.Example.", 80)) == 2
    await resolver.close()


# --- web_fetch: against a local server ---------------------------------------------------------

PAGE = """<!doctype html><html><head><title> Test &amp; Page </title>
<style>body { color: red }</style><script>var secret = "do not show";</script></head>
<body><nav><a href="/">Home</a> | <a href="/about">About</a></nav>
<h1>Main   heading</h1><p>First <b>bold</b> paragraph
spread over lines.</p><p>Caf&eacute; &lt;ok&gt;</p>
<ul><li>one</li><li>two</li></ul><noscript>enable JS</noscript>
<svg><text>svg text</text></svg><h2>Sub</h2><div>tail<br>end</div></body></html>"""


GZIPPED_ZEROS = gzip.compress(bytes(20_000_000))  # 20 MB once decompressed, ~20 KB on the wire
SENT = web.AppKey("sent", dict)  # {"bytes": how much /endless has written}


def make_app() -> web.Application:
    app = web.Application()
    app[SENT] = {"bytes": 0}

    def reply(**kwargs: Any) -> Any:
        async def handler(request: web.Request) -> web.Response:
            return web.Response(**kwargs)
        return handler

    async def redirect(request: web.Request) -> web.Response:
        raise web.HTTPFound(request.query["to"])

    async def chain(request: web.Request) -> web.Response:
        n = int(request.match_info["n"])
        raise web.HTTPFound(f"/chain/{n - 1}" if n > 0 else "/page")

    async def endless(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await response.prepare(request)
        sent = request.app[SENT]
        try:
            while sent["bytes"] < 50_000_000:
                await response.write(b"x" * 65536)
                sent["bytes"] += 65536
        except (ConnectionError, RuntimeError):
            pass
        return response

    app.router.add_get("/page", reply(text=PAGE, content_type="text/html"))
    app.router.add_get("/redirect", redirect)
    app.router.add_get("/chain/{n}", chain)
    app.router.add_get("/endless", endless)
    app.router.add_get("/gzip", reply(body=GZIPPED_ZEROS, headers={
        "Content-Encoding": "gzip", "Content-Type": "text/plain"}))
    app.router.add_get("/latin1", reply(body="<meta charset=iso-8859-1><p>Café</p>".encode(
        "latin-1"), content_type="text/html"))
    app.router.add_get("/long", reply(text="word " * 1200))
    app.router.add_get("/json", reply(text='{"ok": true, "n": 1}',
                                      content_type="application/json"))
    app.router.add_get("/missing", reply(status=404, text="no such page"))
    app.router.add_get("/image", reply(body=b"\x89PNG" + bytes(100), content_type="image/png"))
    return app


@pytest.fixture
async def server() -> AsyncIterator[TestServer]:
    async with TestServer(make_app(), host="127.0.0.1") as test_server:
        yield test_server


def url(server: TestServer, path: str, host: str = "127.0.0.1") -> str:
    return f"http://{host}:{server.port}{path}"


PRIVATE_OK = {"allow_private_addresses": True}


async def test_refused_by_default(server: TestServer) -> None:
    outcome = await call(web_fetch.web_fetch, {"url": url(server, "/page")})
    assert outcome.status is ToolStatus.FAILED
    assert outcome.content == (
        f"Error: FetchRefused: refusing to fetch {url(server, '/page')}: loopback address; "
        f"{web_fetch.HINT}")
    assert "tools.web_fetch.allow_private_addresses" in outcome.content
    for target in (url(server, "/page", "localhost"), url(server, "/page", "127.1"),
                   url(server, "/page", "[::ffff:127.0.0.1]"), url(server, "/page", "[::1]"),
                   "http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/"):
        with pytest.raises(FetchRefused, match="refusing to fetch"):
            await web_fetch.web_fetch(make_ctx(), target)
    assert server.app[SENT]["bytes"] == 0


async def test_name_resolving_to_private_address_is_refused_at_connect(
        server: TestServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(web_fetch, "DefaultResolver", FakeResolver)  # "DNS": 127.0.0.1
    target = url(server, "/page", "rebind.example")
    with pytest.raises(FetchRefused, match=r"rebind\.example resolves to 127\.0\.0\.1 "
                                           r"\(loopback address\); set tools\.web_fetch"):
        await web_fetch.web_fetch(make_ctx(), target)
    ok = await web_fetch.web_fetch(make_ctx(settings={"allowed_hosts": "Rebind.Example"}),
                                   target)
    assert ok.startswith(f"URL: {target}\nStatus: 200 OK")


def unquoted(text: str) -> str:
    """The page's text inside the untrusted-data block (which must be there, closed)."""
    head, _, rest = text.partition("\n<<<untrusted data ")
    tag, _, inner = rest.partition(">>>\n")
    body, end, _ = inner.rpartition(f"\n<<<end untrusted data {tag}>>>")
    assert head and tag and end, text
    return body


async def test_allowed_fetch_extracts_text(server: TestServer) -> None:
    for settings in (PRIVATE_OK, {"allowed_hosts": ["127.0.0.1"]}):
        outcome = await call(web_fetch.web_fetch, {"url": url(server, "/page")},
                             settings=settings)
        assert outcome.status is ToolStatus.SUCCESS, outcome.content
        page = ("# Main heading\n\nFirst bold paragraph spread over lines.\n\nCafé <ok>\n\n"
                "- one\n- two\n\n## Sub\n\ntail\nend")
        assert outcome.content == (
            f"URL: {url(server, '/page')}\nStatus: 200 OK\nContent-Type: text/html\n"
            "Title: Test & Page\n\n" + quote_untrusted(
                page, note="the text below is the web page's content, written by its author"))
    # Direct call, settings on the context.
    text = await web_fetch.web_fetch(make_ctx(settings=PRIVATE_OK), url(server, "/page"))
    for hidden in ("secret", "color", "Home", "enable JS", "svg text"):
        assert hidden not in text


async def test_other_content_types(server: TestServer) -> None:
    ctx = make_ctx(settings=PRIVATE_OK)
    text = await web_fetch.web_fetch(ctx, url(server, "/json"))
    assert "Content-Type: application/json" in text and \
        unquoted(text).endswith('{"ok": true, "n": 1}')
    text = await web_fetch.web_fetch(ctx, url(server, "/missing"))
    assert "Status: 404 Not Found" in text and unquoted(text).endswith("no such page")
    text = await web_fetch.web_fetch(ctx, url(server, "/image"))
    assert "image/png" in text and "binary content, 104 bytes" in text
    text = await web_fetch.web_fetch(ctx, url(server, "/long"), max_chars=100)
    assert "Content-Type: text/plain" in text
    assert "Note: text truncated to 100 of 5999 characters." in text
    assert len(unquoted(text)) == 100


async def test_redirects(server: TestServer) -> None:
    ctx = make_ctx(settings=PRIVATE_OK)
    text = await web_fetch.web_fetch(ctx, url(server, "/chain/3"))
    assert text.startswith(f"URL: {url(server, '/page')} (redirected from "
                           f"{url(server, '/chain/3')})")
    with pytest.raises(ConnectionError, match="too many redirects"):
        await web_fetch.web_fetch(ctx, url(server, "/chain/9"))
    # The first host is allowed by name; the redirect points at a loopback literal that is not.
    ctx = make_ctx(settings={"allowed_hosts": ["localhost"]})
    target = url(server, "/page")
    start = url(server, f"/redirect?to={target}", "localhost")
    with pytest.raises(FetchRefused, match=f"refusing to fetch {target}: loopback address"):
        await web_fetch.web_fetch(ctx, start)
    # ...and the other way round: the redirect target is a name resolving to loopback.
    ctx = make_ctx(settings={"allowed_hosts": ["127.0.0.1"]})
    target = url(server, "/page", "localhost")
    outcome = await call(web_fetch.web_fetch, {"url": url(server, f"/redirect?to={target}")},
                         settings={"allowed_hosts": ["127.0.0.1"]})
    assert outcome.status is ToolStatus.FAILED
    expected = f"refusing to fetch {target}: localhost resolves to 127.0.0.1 (loopback"
    assert expected in outcome.content
    # A redirect to another scheme is refused too.
    with pytest.raises(FetchRefused, match="only http"):
        await web_fetch.web_fetch(ctx, url(server, "/redirect?to=file:///etc/passwd"))


async def test_size_cap_stops_the_download(server: TestServer) -> None:
    ctx = make_ctx(settings={**PRIVATE_OK, "max_bytes": 100_000})
    text = await web_fetch.web_fetch(ctx, url(server, "/endless"), max_chars=500)
    assert "Note: download stopped after 100000 bytes (size limit)." in text
    assert "Note: text truncated to 500 of 100000 characters." in text
    await asyncio.sleep(0.05)
    assert server.app[SENT]["bytes"] < 10_000_000  # the server was cut off, far before its 50 MB


async def test_size_cap_counts_decompressed_bytes(server: TestServer) -> None:
    ctx = make_ctx(settings={**PRIVATE_OK, "max_bytes": 50_000})
    text = await web_fetch.web_fetch(ctx, url(server, "/gzip"))
    assert "download stopped after 50000 bytes" in text


async def test_charset_from_meta(server: TestServer) -> None:
    text = await web_fetch.web_fetch(make_ctx(settings=PRIVATE_OK), url(server, "/latin1"))
    assert unquoted(text) == "Café"


@pytest.mark.parametrize("target", [
    "file:///etc/passwd", "ftp://example.com/x", "gopher://127.0.0.1:70/", "javascript:alert(1)",
    "http://", "not a url", "//example.com/x",
])
async def test_non_http_refused(target: str) -> None:
    outcome = await call(web_fetch.web_fetch, {"url": target}, settings=PRIVATE_OK)
    assert outcome.status is ToolStatus.FAILED
    assert "FetchRefused: refusing to fetch" in outcome.content


async def test_connection_errors_are_clear() -> None:
    port = free_port()  # a port nobody listens on
    outcome = await call(web_fetch.web_fetch, {"url": f"http://127.0.0.1:{port}/"},
                         settings=PRIVATE_OK)
    assert outcome.status is ToolStatus.FAILED
    assert outcome.content.startswith("Error: ConnectionError: could not fetch")


def test_html_to_text_edge_cases() -> None:
    title, text = html_to_text("<p>a<script>x</script>b</p><nav><p>menu</nav>"
                               "<li></li><p>  c &amp; d  </p><svg/><p>e</p>")
    assert (title, text) == ("", "ab\n\nc & d\n\ne")
