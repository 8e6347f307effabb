"""What j0 prints on a terminal: text that others wrote (a server's answers and log, the Hub's,
a registry's, a file's) with its control characters escaped, so it can never redraw a line."""
