"""A toy channel, added to Valet from this one package and one line of valet.yaml
(`channel_modules: [tests.fakes.toy_channel.spec]`): what docs/extending.md, "Adding a
channel", says to write, and nothing more.

Its service is a toy too: people's messages come in as JSON posted to Valet's webhook
(`POST /toy/inbound`: {"id", "from", "text"}), and Valet's messages go out as JSON posted to
the service's own API (`POST <VALET_TOY_URL>/messages`: {"to", "text"}), which the test runs.
"""
