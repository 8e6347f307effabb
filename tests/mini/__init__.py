"""The miniature's tests (a package: see conftest.py)."""
