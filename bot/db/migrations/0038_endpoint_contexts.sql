-- The context window an LLM endpoint showed for a model, learnt from its refusal of a request
-- too long for it (bot/llm/context_limit.py): every later request is built within it.
CREATE TABLE endpoint_contexts (
    endpoint TEXT NOT NULL,
    model TEXT NOT NULL,
    context_tokens INTEGER NOT NULL,
    learnt_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (endpoint, model)
);
