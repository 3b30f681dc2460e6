"""IRT statistics of a dataset: fits from public judgements, prompt planning, published rows and pages."""
