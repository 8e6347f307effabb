"""The measurement floor: what the figures of a run mean, shared by bench and mini.
pairing (settings' requests paired by prompt), stats (paired differences: bootstrap interval,
sign-flip test, verdict, prompts needed), stats_table (those comparisons as markdown rows) and
repetition (how much an output repeats itself)."""
