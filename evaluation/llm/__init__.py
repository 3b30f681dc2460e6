"""LLM endpoints: their configuration, a retrying cached chat client, generation, and a local rehearsal server."""
