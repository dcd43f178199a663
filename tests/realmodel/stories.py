"""What the real-model stories share: `valet serve` and `valet doctor` on a real server
through the recording proxy, turns sent one at a time and timed, and what Valet guarantees
whatever the model says, as checks."""

from __future__ import annotations

import asyncio
import re
import sqlite3
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.e2e.test_console_pipe import ROOT, run_valet
from tests.e2e.test_serve import _until_up
from tests.helpers import until
from tests.ports import free_port
from tests.realmodel.proxy import Exchange, RecordingProxy

# Markup a person must never see: chat-template tokens of the common families, the tool
# template's tags, call-shaped JSON, HTML entities a server escaped.
MARKUP = re.compile(
    r"<\|[a-z_]+\|>|</?tool_call>|</?tool_response>|</?tools>|<end_of_turn>|<start_of_turn>"
    r"|</s>|&#\d+;|&(?:quot|amp|lt|gt|apos);|\{\s*\"name\"\s*:")
# A raw log line in a command's output (`2026-12-02 02:17:06,033 WARNING bot.llm...`).
LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d\S* +(?:DEBUG|INFO|WARNING|ERROR)\b",
                      re.M)
# Valet's own error classes (LLMContextOverflowError...): a model may well write Python's.
CLASS_NAME = re.compile(r"\bLLM[A-Za-z]*Error\b")
LLM_TIMEOUT = 90.0  # llm.timeout_seconds in the stories' valet.yaml
# A turn's bound: two attempts at the timeout (the port retries a timeout once) and the
# time to read the answer and send it.
TURN_BOUND = 2 * LLM_TIMEOUT + 20.0


@dataclass
class Turn:
    said: str
    seconds: float
    shown: list[str]  # every text the person was shown for it (each edit too)
    exchanges: list[Exchange] = field(default_factory=list)

    @property
    def tokens(self) -> tuple[int, int]:
        return (sum(e.prompt_tokens for e in self.exchanges),
                sum(e.completion_tokens for e in self.exchanges))


def processed(db: Path) -> int:
    """Messages the gateway has finished with (answered, or failed with a line said)."""
    if not db.exists():
        return 0
    with sqlite3.connect(db) as conn:
        return int(conn.execute(
            "SELECT COUNT(*) FROM inbox WHERE processed_at IS NOT NULL").fetchone()[0])


async def start_serve(env: dict[str, str], log: Path) -> asyncio.subprocess.Process:
    port = free_port()
    env["VALET_HTTP_PORT"] = str(port)
    with log.open("wb") as out:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "serve", env=env, cwd=ROOT, stdout=out, stderr=out)
    await _until_up(f"http://127.0.0.1:{port}/readyz", proc)
    return proc


async def stop_serve(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        proc.terminate()
        try:
            await asyncio.wait_for(proc.wait(), 30)
        except TimeoutError:
            proc.kill()
            await proc.wait()


async def answered(db: Path, count: int, what: str) -> float:
    """Seconds until the gateway has finished with `count` messages (within a turn's
    bound)."""
    started = time.monotonic()
    await until(lambda: processed(db) >= count, what, timeout=TURN_BOUND)
    return time.monotonic() - started


async def doctor(env: dict[str, str]) -> tuple[int, str]:
    # Its probes ask the real model several questions, each capped: generous on a loaded
    # 2-core machine (seen: 7-33 s quiet, past 60 s beside another suite).
    code, out, err = await run_valet(["doctor"], env, timeout=240)
    return code, out + err


async def after_the_conversation(serve: asyncio.subprocess.Process, proxy: RecordingProxy,
                                 env: dict[str, str]) -> tuple[list[Exchange], int, str]:
    """`valet serve` stopped, then `valet doctor` on the same server: the conversation's
    exchanges, and the doctor's exit code and output (its own exchanges follow in the
    proxy's)."""
    await stop_serve(serve)
    conversation = list(proxy.exchanges)
    code, out = await doctor(env)
    return conversation, code, out


def check_screen(turns: list[Turn]) -> None:
    for turn in turns:
        assert turn.shown, f"{turn.said!r} got no reply"
        for text in turn.shown:
            assert not MARKUP.search(text), f"markup on screen for {turn.said!r}: {text!r}"
            assert not CLASS_NAME.search(text), f"a class name on screen: {text!r}"
        assert turn.seconds <= TURN_BOUND, f"{turn.said!r} took {turn.seconds:.0f} s"


def check_story(name: str, turns: list[Turn], proxy: RecordingProxy,
                conversation: list[Exchange], doctor_said: str) -> None:
    """What every story holds Valet to, whatever the model said: its turns reported, each
    answered within its bound with nothing of a template on screen, and no raw log line in
    the doctor's output."""
    report(name, turns, proxy.exchanges[len(conversation):])
    check_screen(turns)
    assert not LOG_LINE.search(doctor_said), doctor_said


def report(name: str, turns: list[Turn], extra: list[Exchange]) -> str:
    """One line per turn (time, tokens, cache), for the notes: pytest -s shows it."""
    lines = [f"real model story {name}:"]
    for turn in turns:
        cached = sum(e.cached_tokens for e in turn.exchanges)
        prompt, completion = turn.tokens
        lines.append(f"  {turn.seconds:5.1f} s  {len(turn.exchanges)} request(s)  "
                     f"{prompt} prompt tokens ({cached} from cache) {completion} out  "
                     f"{turn.said!r} -> {turn.shown[-1:]!r}")
        lines.extend(f"      {e.seconds:5.1f} s HTTP {e.status} {len(e.offered)} tools "
                     f"{e.prompt_tokens}+{e.completion_tokens} tokens {e.finish_reason} "
                     f"calls {e.calls} {e.error[:160]}" for e in turn.exchanges)
    if extra:
        lines.append(f"  doctor: {len(extra)} request(s), "
                     f"{sum(e.seconds for e in extra):.1f} s of the server")
    text = "\n".join(lines)
    print(text)
    return text


__all__ = ["RecordingProxy", "Turn", "after_the_conversation", "answered", "check_story",
           "start_serve", "stop_serve"]
