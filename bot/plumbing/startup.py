"""Start-up without the cyclic garbage collector.

Starting Valet imports several hundred modules and builds its parts: well over a million
objects that live as long as the process. While they are made, the collector keeps scanning
all of them again (a full collection each time the heap grows by a quarter), a good part of
the start-up time, and finds nothing: module objects are not garbage. So the `valet` command
pauses it from its first line (bot.cli.main) until the process is up (`started`: after
`valet serve` or `valet chat` has started its parts); then what start-up made is frozen (never
scanned again, which also makes every later full collection of a long-running process
cheaper) and the collector runs as usual. A command that ends before (`valet doctor`) turns
it back on as it returns. Nothing else pauses it: a test importing the app keeps its own.
"""

from __future__ import annotations

import gc

_paused = False


def pause_collector() -> None:
    """From here until `started`: no cyclic collection (it was on: it is paused)."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def started() -> None:
    """The process is up: what start-up made is frozen and the collector runs again (only if
    `pause_collector` paused it)."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()
