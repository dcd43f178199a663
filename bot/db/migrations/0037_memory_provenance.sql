-- Where a remembered fact came from: 1 when it was learnt in a turn that held text someone
-- else wrote (a web page, a mail, a forwarded message, an MCP result). Recalling such a fact
-- hands it to the model as untrusted data, so the turn that reads it is tainted (every change
-- asks: docs/security.md). The extraction queue carries the same mark for its turn.
ALTER TABLE memory_facts ADD COLUMN from_third_party INTEGER NOT NULL DEFAULT 0;
ALTER TABLE memory_extractions ADD COLUMN third_party INTEGER NOT NULL DEFAULT 0;
