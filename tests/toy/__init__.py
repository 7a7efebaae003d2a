"""A tiny task outside LRA with variable-size examples, for testing the data path."""
