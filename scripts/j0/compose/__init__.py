"""The compose floor: what compose.yaml and its .env say, read as compose reads them.
switches (the switches' effective values, from the pins and the .env) and dotenv (compose's .env
rules: interpolation, quoting, depth), shared by doctor, status and engine-check."""
