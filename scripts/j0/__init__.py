"""j0: build, check and run vLLM's DFlash speculator with JetSpec++'s J0 context initialisation."""

__version__ = "0.1.0"
