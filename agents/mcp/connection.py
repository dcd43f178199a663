"""One MCP server's session, for the whole process.

Started when first needed (`ensure`), kept while the process runs, and started again with
backoff when it dies (the server exits, the connection drops). One task owns the session from
start to end (the SDK's sessions live in task groups that must be entered and left by the same
task); callers only wait for it. The server's tool list is read at each start and again when
the server says it changed (`notifications/tools/list_changed`, or a `subscriptions/listen`
event on a 2026-07-28 connection), at most once a second however many notifications come
(agents.mcp.changes); the last list is kept while a restart is under way.

The `mcp` SDK is imported here only when a session starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from agents.mcp.changes import ListChanges
from agents.mcp.config import McpServerConfig
from agents.mcp.secrets import SecretMissing, SecretReader
from bot.plumbing.backoff import backoff_delay
from bot.plumbing.private import open_private
from bot.tools.capabilities import SourceUnavailable

if TYPE_CHECKING:
    import mcp_types
    from mcp import Client

log = logging.getLogger(__name__)
MAX_TOOL_PAGES = 20  # a server that pages forever cannot hang a start


class McpUnavailable(SourceUnavailable):
    """The server is not running and could not be started (now); the message says why."""


class CallInterrupted(Exception):
    """The connection was lost while a call ran: whether it took effect is unknown."""


@dataclass(frozen=True)
class RestartPolicy:
    base_seconds: float = 0.5  # the first restart after a death
    cap_seconds: float = 60.0
    # Failed starts in a row before it stops trying on its own; the next call tries again.
    max_failures: int = 5


class McpConnection:
    def __init__(self, config: McpServerConfig, secrets: Callable[[], SecretReader], *,
                 on_tools: Callable[[list[mcp_types.Tool]], None] | None = None,
                 restart: RestartPolicy | None = None, log_dir: Path | None = None) -> None:
        self.config = config
        self._secrets = secrets
        self._on_tools = on_tools
        self.restart = restart or RestartPolicy()
        self.log_dir = log_dir
        self.tools: list[mcp_types.Tool] = []  # the last list the server gave
        self.state = "stopped"  # starting, running, restarting, failed, closed
        self.last_error = ""
        self.starts = 0  # sessions started in this process
        self._client: Client | None = None
        self._runner: asyncio.Task[None] | None = None
        self._attempt: asyncio.Future[None] | None = None
        self._lost = asyncio.Event()
        self._closing = False
        self._changes: ListChanges | None = None  # this session's list_changed (debounced)

    @property
    def running(self) -> bool:
        return self._client is not None and not self._lost.is_set()

    async def ensure(self) -> list[mcp_types.Tool]:
        """The server's tools, starting it if it is not running (McpUnavailable: why not)."""
        if self.running:
            return self.tools
        if self._closing:
            raise McpUnavailable("Valet is shutting down")
        if self.state == "restarting":
            raise McpUnavailable(f"it stopped ({self.last_error}) and is being restarted; "
                                 "try again in a moment")
        if self._runner is None or self._runner.done():
            self._attempt = asyncio.get_running_loop().create_future()
            self._runner = asyncio.create_task(self._run(), name=f"mcp:{self.config.name}")
        assert self._attempt is not None
        await asyncio.shield(self._attempt)  # one caller giving up does not stop the start
        return self.tools

    async def call(self, tool: str, arguments: dict[str, Any], timeout: float
                   ) -> mcp_types.CallToolResult:
        """One `tools/call`. TimeoutError after `timeout` s (the server is told to cancel);
        CallInterrupted when the connection is lost meanwhile; MCPError as the server said."""
        from mcp import MCPError
        from mcp_types import CONNECTION_CLOSED

        await self.ensure()
        client = self._client
        if client is None:
            raise McpUnavailable("it stopped; it is being restarted")
        try:
            async with asyncio.timeout(timeout):
                return await client.call_tool(tool, arguments)
        except MCPError as err:
            if err.code != CONNECTION_CLOSED:
                raise
            self._lost.set()
            raise CallInterrupted(str(err)) from None
        except TimeoutError:
            raise
        except (OSError, ConnectionError) as err:  # (TimeoutError is an OSError too)
            self._lost.set()
            raise CallInterrupted(f"{type(err).__name__}: {err}") from None

    async def close(self) -> None:
        self._closing = True
        self._lost.set()
        runner = self._runner
        if runner is not None and not runner.done():
            try:
                async with asyncio.timeout(10):
                    await asyncio.shield(runner)
            except TimeoutError:
                runner.cancel()
                await asyncio.gather(runner, return_exceptions=True)
        self.state = "closed"

    # --- the task that owns the session ----------------------------------------------------

    async def _run(self) -> None:
        failures = 0
        while not self._closing:
            self.state = "starting"
            try:
                await self._session()  # returns when the session is lost or closing
                failures = 0
            except Exception as err:
                failures += 1
                self.last_error = _describe(err)
                log.warning("MCP server %s: %s", self.config.name, self.last_error)
                self._settle(McpUnavailable(f"it could not be started: {self.last_error}"))
            if self._closing:
                break
            if failures >= self.restart.max_failures:
                self.state = "failed"
                return
            self.state = "restarting"
            await asyncio.sleep(backoff_delay(max(1, failures), base=self.restart.base_seconds,
                                              cap=self.restart.cap_seconds))
            self._attempt = asyncio.get_running_loop().create_future()
        self.state = "closed"
        self._settle(McpUnavailable("Valet is shutting down"))

    async def _session(self) -> None:
        async with contextlib.AsyncExitStack() as stack:
            client = await self._connect(stack)
            self._client = client
            self._lost.clear()
            self.starts += 1
            self.state = "running"
            log.info("MCP server %s started (%d tools)", self.config.name, len(self.tools))
            self._settle(None)
            listener = self._listen_for_changes(client)
            try:
                await self._lost.wait()
            finally:
                self._client = None
                changes, self._changes = self._changes, None
                if changes is not None:
                    await changes.close()
                if listener is not None:
                    listener.cancel()
                    await asyncio.gather(listener, return_exceptions=True)
            if not self._closing:
                self.last_error = "the server stopped"
                log.warning("MCP server %s stopped; restarting", self.config.name)

    async def _connect(self, stack: contextlib.AsyncExitStack) -> Client:
        from importlib.metadata import version

        from mcp import Client
        from mcp_types import Implementation

        transport = await self._transport(stack)
        client = Client(_watched(transport, self._lost.set), mode="auto", cache=None,
                        message_handler=self._on_message,
                        client_info=Implementation(name="valet", version=version("valet")))
        async with asyncio.timeout(self.config.start_timeout_seconds):
            await stack.enter_async_context(client)
            await self._refresh(client)
        return client

    async def _transport(self, stack: contextlib.AsyncExitStack) -> Any:
        reader = self._secrets()
        try:
            if self.config.command:
                from mcp.client.stdio import StdioServerParameters, stdio_client

                env = await reader.resolve(self.config.env)
                params = StdioServerParameters(command=self.config.command[0],
                                               args=self.config.command[1:], env=env,
                                               cwd=self.config.cwd)
                return stdio_client(params, errlog=stack.enter_context(self._errlog()))
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            headers = await reader.resolve(self.config.headers)
            http = await stack.enter_async_context(httpx2.AsyncClient(
                headers=headers, timeout=httpx2.Timeout(30, read=300)))
            return streamable_http_client(self.config.url or "", http_client=http)
        except SecretMissing as err:
            raise McpUnavailable(f"a secret is missing: {err}") from None

    def _errlog(self) -> TextIO:
        """Where the server's own stderr goes: a file beside Valet's log, never the console."""
        if self.log_dir is None:
            return open(os.devnull, "w")  # closed by the session's exit stack
        return open_private(self.log_dir / f"mcp-{self.config.name}.log")

    async def _refresh(self, client: Client) -> None:
        tools: list[mcp_types.Tool] = []
        cursor: str | None = None
        for _ in range(MAX_TOOL_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools += page.tools
            cursor = page.next_cursor
            if not cursor:
                break
        self.tools = tools
        if self._on_tools is not None:
            self._on_tools(tools)

    async def _on_message(self, message: Any) -> None:
        from mcp_types import ToolListChangedNotification

        if isinstance(message, ToolListChangedNotification):
            self._changed()
        elif isinstance(message, Exception):
            log.warning("MCP server %s: transport error: %s", self.config.name,
                        _describe(message))

    def _changed(self) -> None:
        """The server says its tool list changed: read it again, debounced (never inline:
        this runs on the session's receive path)."""
        client = self._client
        if client is None:
            return
        if self._changes is None:
            self._changes = ListChanges(self.config.name,
                                        lambda: self._refresh_quietly(client))
        self._changes.heard()

    async def _refresh_quietly(self, client: Client) -> None:
        try:
            await self._refresh(client)
        except Exception as err:
            log.warning("MCP server %s: reading its changed tool list failed: %s",
                        self.config.name, _describe(err))

    def _listen_for_changes(self, client: Client) -> asyncio.Task[None] | None:
        """2026-07-28 connections: changes come only to a `subscriptions/listen` stream."""
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        tools = client.server_capabilities.tools
        if client.protocol_version not in MODERN_PROTOCOL_VERSIONS or tools is None or \
                not tools.list_changed:
            return None

        async def listen() -> None:
            try:
                async with client.listen(tools_list_changed=True) as events:
                    async for _ in events:
                        self._changed()
            except Exception as err:  # the session's end shows up here too
                log.info("MCP server %s: change stream ended: %s", self.config.name,
                         _describe(err))

        return asyncio.create_task(listen())

    def _settle(self, error: Exception | None) -> None:
        attempt = self._attempt
        if attempt is None or attempt.done():
            return
        if error is None:
            attempt.set_result(None)
        else:
            attempt.set_exception(error)
            attempt.exception()  # retrieved: a start nobody waited for is not a warning


@contextlib.asynccontextmanager
async def _watched(transport: Any, ended: Callable[[], None]) -> AsyncIterator[Any]:
    """The transport, its read side reporting the end of the stream (the server exited, the
    connection dropped) so a session that dies while idle is noticed and restarted."""
    import anyio

    class Watched(anyio.abc.ObjectReceiveStream[Any]):
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        async def receive(self) -> Any:
            try:
                return await self.inner.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                ended()
                raise

        async def aclose(self) -> None:
            await self.inner.aclose()

    async with transport as (read, write):
        yield Watched(read), write


def _describe(err: BaseException) -> str:
    """One line for a failure; an exception group says what is inside it."""
    while isinstance(err, BaseExceptionGroup) and err.exceptions:
        err = err.exceptions[0]
    text = str(err).strip().splitlines()[0] if str(err).strip() else ""
    return f"{type(err).__name__}: {text}" if text else type(err).__name__
