"""`j0 serve`: the container's launcher: the J0/dump switches and speculative config turned into
`vllm serve` arguments, checked against the article's setup."""
