"""The ground floor: where j0 meets the file system and the network, the same for every command.

atomic (files replaced whole or not at all, and the locks that keep two runs off one output),
secret_file (a token or key read from a file: its mode and owner checked, never echoed), urls (a
URL's credentials: masked in every file and message, sent only as a header to their own origin),
document (a typed document declared once: its checks from its annotations), fields (the kinds
and rules a document's keys are checked by), http_deadline (a deadline over a whole HTTP exchange)
processes (the processes a command starts, owned and stopped with it) and host_tools (the
host's own tools, docker and nvidia-smi, run with a deadline).
Standard library only; imports nothing of j0 but j0.errors.
"""
