"""The compose backend of `j0 bench matrix`: one setting after another on this machine's GPU.

project (`docker compose` in the checkout, and what its rendered project runs), backend (one
setting: up, wait for /health, `j0 bench run`, the server's log, down).
"""
