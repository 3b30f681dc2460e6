"""Daily submission quotas and the public queue."""
