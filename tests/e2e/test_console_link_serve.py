"""`valet console-link` beside a running `valet serve`: when that serve started with the
console off (it reads console.enabled at start), the link it prints answers 404, and the
command says so (restart serve); when the serve answers /console, it says nothing more."""

from __future__ import annotations

import asyncio
import signal

import aiohttp

from tests.e2e.test_chat_beside_serve import _serve, _until_exists
from tests.e2e.test_console_pipe import clean_env, run_valet
from tests.ports import free_port


async def _link_status(url: str) -> int:
    async with aiohttp.ClientSession() as http, http.get(url) as resp:
        return resp.status


async def test_console_link_says_when_the_running_serve_has_no_console(fake_llm, tmp_path):
    port = free_port()
    env = clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url, VALET_LLM_MODEL="m",
                    VALET_HTTP_PORT=str(port), VALET_CONSOLE_URL=f"http://127.0.0.1:{port}")
    for console_on_in_serve in (False, True):
        serving = {**env, "VALET_CONSOLE_ENABLED": "true" if console_on_in_serve else "false"}
        server = await _serve(serving)
        try:
            await _until_exists(tmp_path / "serve-terminal.json")
            # The operator turns the console on, then asks for a link.
            code, out, err = await run_valet(["console-link"],
                                             {**env, "VALET_CONSOLE_ENABLED": "true"})
            assert code == 0, err
            url = out.strip()
            assert url.startswith(f"http://127.0.0.1:{port}/console/login?t=")
            said = "started with the console off: restart it"
            if console_on_in_serve:
                assert said not in err and await _link_status(url) == 200
            else:
                assert said in err, err
                assert await _link_status(url) == 404  # what it warned about
        finally:
            server.send_signal(signal.SIGTERM)
            await asyncio.wait_for(server.communicate(), 30)
