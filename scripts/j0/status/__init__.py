"""`j0 status`: whether a running server is the article's setup, from what the server says
(health, model, spec-decode counters around one probe) and what its log says (identity lines)."""
