"""The miniature's tokenizer: byte-level BPE trained with `tokenizers` on the training files,
specials `<unk> <s> </s> <pad> <mask>` at ids 0-4, saved as a PreTrainedTokenizerFast."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from j0.mini.sizes import SPECIALS


def train_tokenizer(texts: list[str], vocab: int) -> Any:
    """A `tokenizers.Tokenizer` of `vocab` ids (byte-level: every byte string encodes)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE(unk_token=SPECIALS[0]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab,
        special_tokens=list(SPECIALS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer, length=len(texts))
    return tokenizer


def wrap(tokenizer: Any) -> Any:
    """The PreTrainedTokenizerFast that every model folder holds."""
    from transformers import PreTrainedTokenizerFast

    unk, bos, eos, pad, mask = SPECIALS
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        unk_token=unk,
        bos_token=bos,
        eos_token=eos,
        pad_token=pad,
        mask_token=mask,
    )


def save(tokenizer: Any, folder: Path) -> None:
    wrap(tokenizer).save_pretrained(folder)


def load(folder: Path) -> Any:
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast.from_pretrained(str(folder))
