"""J0 as a vLLM general plugin (vLLM 0.34.0 and what else overlay/pins.env proves): a speculative
method, `dflash_j0`, whose speculator is vLLM's DFlashSpeculator with the J0 file's code, made in
memory from the installed speculator.py and the release's J0 patch, each checked by sha256; no file
of vLLM's is written. J0's switches are the method's `speculator_options` (options.py).

Modules: register (the entry point, `vllm.general_plugins`: the version guard, then the method),
proven (the guard: proven releases from the pins, the installed vLLM), options (the switches),
source (the J0 file's text), kernel (that text made a module, its class a subclass of vLLM's),
config (the method's SpeculatorConfig), dflash_j0 (the speculator vLLM builds; its identity line),
log_line (the plugin's log line, as `j0 status` reads it). Only config and dflash_j0 import vLLM.
"""

METHOD = "dflash_j0"
