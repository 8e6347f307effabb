"""The fuzz suite (a package, so that its conftest.py is tests/fuzz/conftest.py and not
another module named conftest)."""
