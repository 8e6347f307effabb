"""`j0 bench matrix`: the article's experiment, every setting (draft tokens x J0 off/on) on the
same prompts, on a restarted server per setting.

run (run_matrix(MatrixOptions): the settings, the prompts, matrix.json, then a backend), settings
(the settings and the one `j0 bench run` of a setting), prompts, layout (the results folder); the
backends below: compose/ (this machine) and k8s/ (a cluster).
"""

BACKENDS = ("compose", "k8s")  # --backend
