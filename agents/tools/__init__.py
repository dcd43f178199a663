"""Built-in tools: clock, calculator and web fetch. Each module holds `@tool` functions."""
