"""`j0 dumps replay`: the dumps on the DFlash authors' reference drafter, step by step.

run is the command (the replay and its report), model the reference drafter, weights what it
takes from the target (embed_tokens, lm_head)."""
