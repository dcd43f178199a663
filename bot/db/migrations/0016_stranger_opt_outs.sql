-- Numbers and chats that said STOP while they were nobody's identity (someone a person had
-- Valet text): nothing more is sent to them until they say START. A user's own identities
-- keep their opt-out on the identities row.
CREATE TABLE stranger_opt_outs (
    channel TEXT NOT NULL,
    address TEXT NOT NULL,
    opted_out_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (channel, address)
);
