"""`j0 overlay`: the article's speculator.py, made from vLLM's base file and the pinned patch,
and checked against the pinned sha256s (`build`, `verify`). cli.py parses; run.py does the work:
run_build(BuildOptions) -> Built, run_verify(VerifyOptions) -> Verdict."""
