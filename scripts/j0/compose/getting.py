"""How a user gets what compose.yaml needs, Docker Compose v2 (2.20 or later, the `docker compose`
plugin) and buildx, on Debian and Ubuntu: said by `j0 doctor` and `j0 status --compose` where
they find it missing, and in the README.

Debian 12's own `docker-compose` package is Compose v1 (1.29, the Python `docker-compose`
command, which cannot read compose.yaml's `include`), and Debian 12 has no buildx package; Debian
13's `docker-compose` and `docker-buildx` are the v2 plugin and buildx; Ubuntu names its v2 plugin
`docker-compose-v2`. Docker's own apt repository has both plugins for either distribution.
"""

from __future__ import annotations

COMPOSE_V2_AND_BUILDX = (
    "Compose v2 (`docker compose`, 2.20 or later) and buildx: on Debian 13 (trixie) or later "
    "`sudo apt-get install docker-compose docker-buildx`; on Ubuntu 24.04 `sudo apt-get install "
    "docker-compose-v2 docker-buildx`; on Debian 12 (bookworm, whose docker-compose package is "
    "Compose v1), Ubuntu 22.04 or another: Docker's apt repository (docs.docker.com/engine/"
    "install/debian, .../ubuntu), `sudo apt-get install docker-ce docker-ce-cli containerd.io "
    "docker-buildx-plugin docker-compose-plugin` in place of docker.io"
)
