"""Real `valet serve --role ...` processes on one Postgres and one Redis, for the stories of
tests/e2e/test_roles.py and test_chaos.py: start one, wait until it answers, kill it (-9),
start it again on the same port."""

from __future__ import annotations

import asyncio
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

from tests.e2e.test_console_pipe import ROOT
from tests.ports import free_port


@dataclass
class RoleProcess:
    roles: list[str]
    env: dict[str, str]
    log: Path
    port: int = field(default_factory=free_port)
    proc: asyncio.subprocess.Process | None = None
    starts: int = 0
    up: bool = False  # answered since its last start (a process still starting is not up)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    # Generous: three of these start at once, and a loaded 2-core machine (load 16) took 60 s
    # to import and start one; the bound costs nothing when the machine is quick.
    async def start(self, *, ready: bool = True, timeout: float = 180.0) -> None:
        args = [a for role in self.roles for a in ("--role", role)]
        self.up = False
        with self.log.open("ab") as err:
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "bot", "serve", *args,
                env={**self.env, "VALET_HTTP_PORT": str(self.port)}, cwd=ROOT,
                stdout=asyncio.subprocess.DEVNULL, stderr=err)
        self.starts += 1
        await self.until_up("/readyz" if ready else "/healthz", timeout)
        self.up = True

    async def until_up(self, path: str, timeout: float) -> None:
        deadline = asyncio.get_running_loop().time() + timeout
        async with aiohttp.ClientSession() as http:
            while asyncio.get_running_loop().time() < deadline:
                if self.proc is None or self.proc.returncode is not None:
                    raise AssertionError(f"valet serve {self.roles} exited early; see "
                                         f"{self.log}:\n{self.log.read_text()[-3000:]}")
                try:
                    async with http.get(self.base + path) as resp:
                        if resp.status == 200:
                            return
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.1)
        raise AssertionError(f"valet serve {self.roles} never answered {path}")

    async def kill(self) -> None:
        self.up = False
        if self.alive:
            assert self.proc is not None
            self.proc.send_signal(signal.SIGKILL)
            await self.proc.wait()

    async def terminate(self, timeout: float = 30.0) -> int:
        if not self.alive:
            return self.proc.returncode if self.proc and self.proc.returncode else 0
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return await asyncio.wait_for(self.proc.wait(), timeout)
        except TimeoutError:
            await self.kill()
            return -9
