"""`j0 mini`: the miniature. A small Qwen3 target and two DFlash drafters (vLLM's mask
initialisation and J0's) trained on this machine's Python source in minutes, then served by vLLM's
real engine in the 2 x 2 matrix (drafter mask/J0 x J0 off/on) with `j0 bench`, `j0 dumps check`
and a teacher-forced cross-check against the `dflash` package's reference.

sizes (what is trained, full and smoke), device (cuda/cpu, autocast), corpus (the files, the
held-out rule, corpus.json), tokenizer (byte-level BPE), data (token windows), target_train,
drafter_batch (anchors, blocks, the attention mask, labels), drafter_train, train (the order of
`j0 mini train`), prompts (held-out prompts cut to context lengths), run (the matrix),
crosscheck_steps (the step arithmetic), crosscheck (the reference at the engine's anchors).
torch, transformers, tokenizers and dflash are imported inside functions.
"""
