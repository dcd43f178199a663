"""The owner's web console: server-rendered pages under /console on `valet serve`'s own HTTP
server, for what waits (approvals), what will run (tasks), what it costs (usage), what did not
go out (outbox), who is in (people, pairing, memory) and how it runs (health).

It is part of the composition edge: it reads many stores, and acts only through the parts'
own public ways (the approvals package's decision path, the task service, the outbox store,
access control, the memory service); it runs no SQL of its own. Off unless
`console.enabled: true`; only the owner gets in, with a one-time link sent to their own chat
(`/console`, or `valet console-link`). Nothing here is imported by the core.

    command.py    the /console chat command and the login URL
    auth.py       sign-in, sessions (cookie), CSRF, rate-limited attempts, the action record
    web.py        the routes, and the pages' handlers in pages_*.py
    render.py     Jinja2 templates (templates/), the SVG chart, security headers
"""
