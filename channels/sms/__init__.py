"""SMS over Twilio: signed webhooks in (`webhook`, `inbound`), the REST API out (`adapter`),
text that reads well and costs few segments (`render`, `gsm`).

The channel is described once in `spec` (channels/spec.py), which builds it on a
`ChannelHost` when the app asks (`channel.build_sms_channel`); twilio, about 90 ms to import,
loads only then: `channels.sms.store` alone (the SMS tables, read by metrics and the console)
does not need it.
"""
