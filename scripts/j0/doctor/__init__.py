"""`j0 doctor`: whether this host can run the article's `docker compose up` (Docker, GPU, memory,
the Hub, disk), before anything is pulled or downloaded."""
