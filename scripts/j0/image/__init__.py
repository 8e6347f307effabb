"""`j0 image`: the article's image (vLLM's base image plus the overlay), its build step that runs
inside the base image on the standard library alone, its smoke checks and its identity."""
