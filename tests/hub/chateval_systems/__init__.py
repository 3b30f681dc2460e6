"""The original ChatEval systems on the hub: word vectors for embedding-average, attached responses, leaderboards."""
