"""The ReAct loop: react (top to bottom: steer, call the model, run a round of tools, stop or
go on), calls, state, types, steering, fallback, masking, context (the request view),
subtasks, journal, traces."""
