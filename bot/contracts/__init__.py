"""The types every layer shares. Nothing here imports the rest of Valet."""
