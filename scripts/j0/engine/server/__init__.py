"""A running vLLM server: the one launcher, its HTTP endpoints, its log's start-up lines, which
speculator.py it runs (identity line and record), J0 as asked and as run, and what serving this
machine's vLLM needs."""
