"""The turn: one message (or a trigger's run) from its context to the stored reply.

orchestrator (the pipeline), order (the steps before the loop and why in that order),
model (the turn's types), commands, context_steps, modes (how much machinery a turn gets),
compose (the one place the stored turn is built), brief (a reply that must fit), media,
usage, telemetry, trace_store."""
