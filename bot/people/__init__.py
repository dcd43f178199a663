"""People: who Valet serves and who may talk to it. users (the people), identity (their
addresses per channel, reachability, /link), access (unknown senders: pairing, allowlist),
guesses (codes strangers can guess, limited), claims (the owner's one-time claim code),
ratelimit, console_login (the owner's console sign-in)."""
