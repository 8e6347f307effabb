"""Stand-in base images for the Docker tests (see build.py)."""
