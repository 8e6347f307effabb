"""`j0 doctor` and `j0 status`: whether this host can run the article's `docker compose up`, and
whether a running server is the article's setup (health, counters, its log's identity lines)."""
