"""`j0 drafter`: the DFlash drafter fetched from the Hub at a full commit sha, verified file by
file, and its config.json made causal (`fetch`, `patch-config`, `causality`)."""
