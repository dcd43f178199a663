"""What every part runs on: clock, backoff, offload, stall, logs, streams, request bodies,
Redis, background work, metrics."""
