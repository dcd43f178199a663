"""Twilio, shared by the channels that speak its Messages API (SMS, WhatsApp): the account
and its REST client (`rest`), the signed webhooks and their delivery reports (`webhooks`),
and what `valet onboard` and `valet doctor` ask of the account (`checks`, `doctor`).

Nothing here names a channel: each channel passes its own paths, numbers and words. Importing
this package loads nothing heavy; its modules load twilio when imported.
"""
