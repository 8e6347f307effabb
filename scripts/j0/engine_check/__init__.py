"""`j0 engine-check`: J0 proven inside vLLM's real engine on this GPU in minutes: tiny random
models served J0 on (with step dumps) and off, checked by logs, outputs, dumps, metrics, status."""
