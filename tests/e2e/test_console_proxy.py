"""Issue 34 item 5: the web console behind the shipped Caddyfile (its console block published),
Caddy on this machine in front of a real `valet serve`. Someone posts 50 wrong sign-ins from
one address; their attempts are refused (429) once past the limit; then the owner asks for a
fresh link by SMS and signs in with it through the same proxy."""

from __future__ import annotations

import asyncio
import re
import shutil
import sys

import aiohttp
import pytest

from tests.e2e.test_console_pipe import ROOT, clean_env
from tests.e2e.test_serve import _until_up
from tests.e2e.test_sms_restart import PUBLIC, text
from tests.fakes.fake_twilio import FakeTwilio
from tests.ports import free_port

OWNER = "+12125550123"
DEPLOY = ROOT / "deploy"
LINK = re.compile(r"(/console/login\?t=[\w-]+)")


def published_console_caddyfile() -> str:
    """The shipped Caddyfile with its console block uncommented, as docs/going-live.md says."""
    lines = (DEPLOY / "Caddyfile").read_text().splitlines()
    out = []
    for line in lines:
        bare = line.lstrip("\t")
        if bare.startswith("# @console") or bare.startswith("# handle @console") or \
                bare.startswith("# \treverse_proxy {$VALET_CONSOLE") or bare == "# }":
            line = line.replace("# ", "", 1)
        out.append(line)
    text = "\n".join(out) + "\n"
    assert "\t@console path /console /console/*" in text and "\t# }" not in text
    return text


async def caddy_in_front(tmp_path, valet_port: int) -> tuple[asyncio.subprocess.Process, int]:
    caddy = shutil.which("caddy")
    if caddy is None:
        pytest.skip("caddy not found: apt-get install caddy (tests/ci_services.sh does)")
    port = free_port()
    config = tmp_path / "Caddyfile"
    config.write_text(published_console_caddyfile())
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
           "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
           "VALET_DOMAIN": f"http://127.0.0.1:{port}",
           "VALET_UPSTREAM": f"127.0.0.1:{valet_port}",
           "VALET_CONSOLE_UPSTREAM": f"127.0.0.1:{valet_port}",
           "CADDY_ADMIN": f"127.0.0.1:{free_port()}"}
    proc = await asyncio.create_subprocess_exec(
        caddy, "run", "--config", str(config), "--adapter", "caddyfile", env=env,
        cwd=tmp_path, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    async with aiohttp.ClientSession() as http:
        for _ in range(300):
            try:
                async with http.get(f"http://127.0.0.1:{port}/healthz") as response:
                    if response.status == 404:  # Caddy answers itself: not published
                        return proc, port
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
    proc.kill()
    raise AssertionError("caddy never came up")


async def test_fifty_wrong_sign_ins_behind_the_proxy_leave_the_owners_fresh_link_working(
        fake_llm, tmp_path):
    valet_port = free_port()
    async with FakeTwilio() as twilio, aiohttp.ClientSession() as http:
        caddy, port = await caddy_in_front(tmp_path, valet_port)
        front = f"http://127.0.0.1:{port}"
        env = clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url, VALET_LLM_MODEL="m",
                        VALET_PUBLIC_URL=PUBLIC, VALET_SMS_FROM_NUMBER="+15005550006",
                        VALET_TWILIO_ACCOUNT_SID=twilio.account_sid,
                        VALET_TWILIO_AUTH_TOKEN=twilio.auth_token,
                        VALET_TWILIO_API_URL=twilio.base_url, VALET_HTTP_PORT=str(valet_port))
        (tmp_path / "valet.yaml").write_text(
            "memory:\n  enabled: false\n"
            f"console:\n  enabled: true\n  url: {front}\n"
            f"owner:\n  phone_numbers: ['{OWNER}']\n")
        serve = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "serve", env=env, cwd=ROOT,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
        try:
            await _until_up(f"http://127.0.0.1:{valet_port}/readyz", serve)
            # Someone else, on another address (127.0.0.2: Caddy names it in
            # X-Forwarded-For), guesses: posts and link pages alike.
            guesser = aiohttp.TCPConnector(local_addr=("127.0.0.2", 0))
            async with aiohttp.ClientSession(connector=guesser) as them:
                statuses = []
                for i in range(50):
                    if i % 5 == 4:
                        async with them.get(f"{front}/console/login?t=guess{i}") as r:
                            statuses.append(r.status)
                    else:
                        async with them.post(f"{front}/console/login", data={"t": f"g{i}"},
                                             allow_redirects=False) as r:
                            statuses.append(r.status)
            assert statuses[:10] == [403] * 10 and set(statuses[10:]) == {429}, statuses
            # The owner asks for a link by SMS and signs in through the same proxy.
            url = f"http://127.0.0.1:{valet_port}/sms/inbound"
            assert await text(http, url, "/console", "SM1", twilio.auth_token) == 200
            [sms] = await twilio.wait_for(1, timeout=30)
            found = LINK.search(sms.body)
            assert found, sms.body
            path = found.group(1)
            async with http.get(front + path) as page:
                assert page.status == 200
            async with http.post(f"{front}/console/login", data={"t": path.split("t=")[1]},
                                 allow_redirects=False) as signed:
                assert signed.status == 303, await signed.text()
                assert "valet_console" in signed.cookies
        finally:
            serve.terminate()
            await serve.wait()
            caddy.terminate()
            await caddy.wait()
