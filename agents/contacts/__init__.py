"""The address book (store, tools) and texting someone for the person (messaging)."""
