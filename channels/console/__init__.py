"""The console channel: the owner's terminal (`valet chat`), alone or attached to `valet
serve`."""
