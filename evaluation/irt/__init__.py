"""Item response theory for pairwise human judgements: fit, bootstrap, significance and published reports."""
