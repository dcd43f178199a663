"""MCP servers as capabilities: any Model Context Protocol server named in a registry file's
`mcp:` list becomes one tool group, its tools named `<server>_<tool>`.

    config.py      the `mcp:` entry (transport, secrets by reference, per-tool policy)
    secrets.py     `env:VAR` and `credential:NAME` references, read when a server starts
    connection.py  one session per server: started when first needed, kept, restarted with
                   backoff when it dies, its tool list refreshed when the server says so
    results.py     a tool result as data for the model (quoted as untrusted, images described)
    source.py      the capability's side: the tools as Valet tools, approvals, timeouts

Nothing here imports the `mcp` SDK at module level: a process that never opens an MCP
capability never loads it (start-up time and a "hi" pay nothing).
"""
