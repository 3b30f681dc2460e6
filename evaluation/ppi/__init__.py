"""Prediction-powered ranking: Bradley-Terry abilities from many judge votes rectified by fewer human votes (PPI++)."""
