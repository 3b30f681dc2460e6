"""User accounts, sign-in tokens and the rate limits that guard them."""
