"""Shared plumbing of the services: the audit log, the job outbox, pagination, the installed datasets."""
