"""Channel adapters: console, Telegram, SMS. They depend on `bot`; `bot` never imports them."""
