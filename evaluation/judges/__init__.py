"""Pairwise LLM judges: versioned prompt templates, verdict parsing, both-order runs over pairs, report cards."""
