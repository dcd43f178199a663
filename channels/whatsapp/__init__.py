"""WhatsApp through Twilio: the same Messages API, account, signed webhooks and delivery
reports as SMS (channels.twilio), with `whatsapp:` addresses. Signed webhooks in (`webhook`,
`inbound`: text, the person's profile name, voice notes, photos, documents, button presses),
the REST API out (`sender`: text in WhatsApp's marks, approval cards as quick-reply buttons
through the Content API, `cards`), the 24-hour window respected (`window`). Described once in
`spec`; docs/whatsapp.md.
"""
