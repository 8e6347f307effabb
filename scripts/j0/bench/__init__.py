"""`j0 bench`: measure acceptance and speed of a running vLLM server with J0 off and on.

run/ (`j0 bench run`: one setting into a result file; run(RunOptions)), results (that file's
document, BenchResult), report (`j0 bench report`: tables and plots of a results folder),
matrix/ (`j0 bench matrix`: every setting on a restarted server, backends compose/ and k8s/);
client, prompts, manifest, pairing and roofline are what these share.
"""
