"""`j0 mini run`: the miniature served in vLLM's real engine (run.py: run_mini; setting, prompts,
seeds, compare, crosscheck, crosscheck_steps, preflight)."""
