"""The J0 reference, independent of the patched kernels: Triton's Philox counter-based generator
in NumPy-free Python, and the draws J0 must make from a request's committed tokens. Used by
`j0 selfcheck` (kernels against it) and `j0 dumps check` (a real run's dumps against it).
"""
