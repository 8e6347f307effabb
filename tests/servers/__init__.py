"""Small real servers of ours that tests run real clients against (127.0.0.1 only)."""
