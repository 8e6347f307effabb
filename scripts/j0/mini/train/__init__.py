"""`j0 mini train`: the miniature's models, trained (run.py: run_train; corpus, data, tokenizer,
target, drafter, batch, generate, temperature, schedule, curves)."""
