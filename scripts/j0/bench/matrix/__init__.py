"""`j0 bench matrix`: the article's experiment, every setting (draft tokens x J0 off/on) on the
same prompts, on a restarted server per setting.

run (run_matrix(MatrixOptions): the settings, the prompts, matrix.json, then a backend), settings
(the settings and the one `j0 bench run` of a setting), prompts, layout (the results folder); the
backends below: compose/ (this machine) and k8s/ (a cluster).
"""

from j0.article.spec_config import TESTED_TOKENS
from j0.engine.server.j0_state import OFF, ON

BACKENDS = ("compose", "k8s")  # --backend
# --tokens and --j0 by default: the article's draft tokens, and J0 off then on at each
DEFAULT_TOKENS = ",".join(map(str, TESTED_TOKENS))
DEFAULT_J0 = f"{OFF},{ON}"
