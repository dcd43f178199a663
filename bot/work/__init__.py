"""How work and signals travel between Valet's processes (docs/architecture.md, section 7).

    streams.py   the work stream: "this person has a stored message" (XADD by whoever stored
                 it; XREADGROUP, XACK, XAUTOCLAIM by the workers)
    control.py   signals every process may need at once: /stop, a message joining a running
                 turn, task changes, run-now, a stored event, a delivery wake-up (Redis
                 pub/sub, or the same calls in one process)
    sweep.py     the workers' bounded scan of the inbox for what no stream entry names (a web
                 process that stored a message and died before its XADD)

Postgres stays the truth: a stream entry or a signal only names a row, and losing one costs a
wait (the scan, a heartbeat), never a message.
"""
