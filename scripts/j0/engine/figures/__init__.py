"""vLLM's spec-decode figures: acceptance from the per-request metrics' counts and from the
/metrics counters, and the ranges those figures can take."""
