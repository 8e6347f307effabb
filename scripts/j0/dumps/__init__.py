"""`j0 dumps`: read the patch's step dumps (`VLLM_DFLASH_DUMP`), show them, check every J0 draw
against the selfcheck's reference, compare two dump sets, and replay them on a reference drafter."""
