"""The article's setup as data: which speculator.py is the article's (identity by sha256), how its
patch is applied, and the serving rules (speculative config, tested draft-token counts,
max-num-seqs, prefix caching) that serve, bench and doctor share. Standard library only.
"""
