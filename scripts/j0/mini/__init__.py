"""`j0 mini`: the miniature. A small Qwen3 target and two DFlash drafters (vLLM's mask
initialisation and J0's) trained on this machine's Python source in minutes, then served by vLLM's
real engine in the 2 x 2 matrix (drafter mask/J0 x J0 off/on) with `j0 bench`, `j0 dumps check`
and a teacher-forced cross-check against the `dflash` package's reference.

manifest (mini.json as a type), sizes (what is trained, full and smoke), device (cuda/cpu,
autocast), numbers (the results READMEs' tables from their data), sets and set_prompts (`j0 mini
sets`); train/ (`j0 mini train`: run, corpus, tokenizer, data, target, drafter, batch, generate,
temperature, schedule, curves) and run/ (`j0 mini run`: run, setting, setting_record, prompts,
seeds, compare, preflight, crosscheck_steps, crosscheck: the reference at the engine's anchors).
torch, transformers, tokenizers and dflash are imported inside functions.
"""
