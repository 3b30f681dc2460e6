"""The public read side: leaderboards and system profiles, downloads (exports) and the static snapshot."""
