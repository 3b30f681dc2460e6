"""Routes: parse input, call one service, render."""
