"""The hub's web layer: FastAPI app, dependencies and routes (one module per resource)."""
