"""`j0 bench`: measure acceptance and speed of a running vLLM server with J0 off and on.

run (one setting into a result JSON), matrix (every setting, restarting the server), report
(tables and plots of a results folder).
"""
