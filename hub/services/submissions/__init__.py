"""Submissions of system responses: upload, admin review, the automatic evaluation run, public names, results."""
