"""LLM judging on the hub: registered judges, what datasets attach, the judging job, and the pages it feeds."""
