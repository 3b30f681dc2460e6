"""Conversation-set submissions: upload checks and storage, review, the evaluation job and its per-role results."""
