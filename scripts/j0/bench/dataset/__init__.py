"""The prompts a benchmark sends: prompts (a built-in generator, a JSONL file or a named set,
its sha256) and long_context (the long-context sets on the Hub)."""
