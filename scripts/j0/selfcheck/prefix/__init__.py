"""`j0 selfcheck --prefix-cache`: sessions whose requests start with prefix-cached positions.

sessions (the batteries: a hit and a no-hit control per scenario), check (the real kernels over
them, against the reference), report (the verdict and what it names), timing (`--bench`: the
prefix-safe fill's cost).
"""
