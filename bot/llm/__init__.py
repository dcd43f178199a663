"""The LLM port: port (the protocol, errors and their handler table), openai_client (the port
on the `openai` client), metered (requests counted), tool_schema, transcribe."""
