"""`j0 bench run`'s side of the wire: client (one streamed request, timed), bounded_http (its
HTTP reads, bounded and same-origin) and chunk_fields (the answer's fields, each type-checked)."""
