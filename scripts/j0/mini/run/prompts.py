"""The run's prompts, chosen so that the comparisons can decide: `per_bin` prompts for each
context length, each from a file of its own that training never saw, none a prefix of another.

Where the files come from, in this order (each file's content once; none whose sha256 is a
training file's):
  1. the held-out files of OUT/corpus.json (the corpus rule: sha256 of the path % 50 == 0);
  2. other files of the corpus's roots that the rule holds out (the corpus stopped before them);
  3. files of the corpus's roots past the training cap: candidates the corpus never took, so no
     model saw them ("unseen").
Within each group the order is the sha256 of "j0-mini-prompts:" + the relative path (fixed, and
not the corpus's sorted order, so the prompts do not all come from one package). The longest
contexts are filled first (they need the longest files); a prompt is the first `context` tokens
of its file (mini tokenizer), ids and text; one whose ids are a prefix of another's, or the other
way round, is skipped. Too few files is an error naming how many there were (`reuse=True`, for
small machines: the remaining prompts are cut from files already used, at offsets that do not
overlap, and share their file's source, so the statistics cluster them).

Written as the bench's JSONL dataset ({"id", "prompt", "source"} per line, the bins interleaved
so that every stretch of the run holds every length) and as prompts.json (each prompt's file:
root, relative path, sha256, group, offset, token ids). Standard library only (the tokenizer is
the caller's).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from j0.edge.atomic import write_text_atomic
from j0.errors import INPUT_LACKS, J0Error
from j0.mini.train.corpus import Corpus, candidates, is_heldout

HELDOUT = "held out (corpus.json)"
HELDOUT_RULE = "held out by the corpus rule (past the corpus)"
UNSEEN = "never in training (past the training cap)"


@dataclass(frozen=True)
class MiniPrompt:
    id: str
    context: int
    ids: list[int]
    text: str
    source: str = ""  # the file's relative path (the statistics' unit)
    root: str = ""
    sha256: str = ""  # the file's
    group: str = ""
    offset: int = 0  # the first token's index in the file


@dataclass
class Pool:
    """Files to cut prompts from, in order, tokenized as they are first needed."""

    files: list[tuple[Path, str, str]]  # (root, relative, group)
    tokenizer: Any
    excluded_sha256: set[str]
    seen: set[str] = field(default_factory=set)
    tokens: dict[str, tuple[list[int], str]] = field(default_factory=dict)

    def each(self) -> Iterator[tuple[Path, str, str, list[int], str]]:
        for root, relative, group in self.files:
            key = f"{root}/{relative}"
            if key not in self.tokens:
                try:
                    data = (root / relative).read_bytes()
                    text = data.decode("utf-8")
                except (OSError, UnicodeDecodeError):
                    continue
                digest = hashlib.sha256(data).hexdigest()
                if digest in self.excluded_sha256 or digest in self.seen:
                    continue
                self.seen.add(digest)
                ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
                self.tokens[key] = (list(ids), digest)
            ids, digest = self.tokens[key]
            yield root, relative, group, ids, digest


def order_key(relative: str) -> str:
    return hashlib.sha256(f"j0-mini-prompts:{relative}".encode()).hexdigest()


def pool_of(corpus: Corpus, tokenizer: Any, roots: Sequence[Path] | None = None) -> Pool:
    train = {f.sha256 for f in corpus.train}
    taken = {(f.root, f.relative) for f in corpus.files}
    first = sorted(corpus.heldout, key=lambda f: order_key(f.relative))
    files: list[tuple[Path, str, str]] = [(Path(f.root), f.relative, HELDOUT) for f in first]
    roots = list(roots) if roots is not None else sorted({Path(f.root) for f in corpus.files})
    rule, unseen = [], []
    for root, relative in candidates(list(roots)):
        if (str(root), relative) in taken:
            continue
        (rule if is_heldout(relative) else unseen).append((root, relative))
    for group, found in ((HELDOUT_RULE, rule), (UNSEEN, unseen)):
        files += [(r, rel, group) for r, rel in sorted(found, key=lambda x: order_key(x[1]))]
    return Pool(files, tokenizer, train)


def _prefix_of_any(ids: list[int], chosen: Sequence[MiniPrompt]) -> bool:
    for other in chosen:
        short, long = (ids, other.ids) if len(ids) <= len(other.ids) else (other.ids, ids)
        if long[: len(short)] == short:
            return True
    return False


def select(
    pool: Pool, contexts: Sequence[int], per_bin: int | Mapping[int, int], reuse: bool = False
) -> list[MiniPrompt]:
    """per_bin prompts of each context (a number, or one per context), longest first, each from
    a file of its own."""
    chosen: list[MiniPrompt] = []
    used: dict[str, int] = {}  # file -> tokens used from its start
    counts = per_bin if isinstance(per_bin, Mapping) else dict.fromkeys(contexts, per_bin)
    for context in sorted(set(contexts), reverse=True):
        want = counts[context]
        mine: list[MiniPrompt] = []
        for root, relative, group, ids, digest in pool.each():
            if len(mine) == want:
                break
            if f"{root}/{relative}" in used or len(ids) < context:
                continue
            prompt = _prompt(context, len(mine), root, relative, group, ids, digest, 0)
            if _prefix_of_any(prompt.ids, [*chosen, *mine]):
                continue
            mine.append(prompt)
            used[f"{root}/{relative}"] = context
        if len(mine) < want and reuse:
            for root, relative, group, ids, digest in pool.each():
                key = f"{root}/{relative}"
                start = used.get(key)
                if len(mine) == want:
                    break
                if start is None or len(ids) - start < context:
                    continue
                prompt = _prompt(context, len(mine), root, relative, group, ids, digest, start)
                if _prefix_of_any(prompt.ids, [*chosen, *mine]):
                    continue
                mine.append(prompt)
                used[key] = start + context
        if len(mine) < want:
            raise J0Error(
                f"{len(mine)} files of at least {context} tokens that no model was trained on "
                f"(held out or past the training cap, each content once, none a prefix of "
                f"another); {want} prompts of {context} tokens were asked for: ask fewer "
                "(--requests), shorter contexts (--contexts), or allow prompts from files "
                "already used (--reuse-files)",
                INPUT_LACKS,
            )
        chosen += mine
    return interleave(chosen, contexts)


def _prompt(
    context: int,
    number: int,
    root: Path,
    relative: str,
    group: str,
    ids: list[int],
    digest: str,
    offset: int,
) -> MiniPrompt:
    cut = ids[offset : offset + context]
    return MiniPrompt(
        id=f"ctx{context}-{number:02d}",
        context=context,
        ids=cut,
        text="",  # decoded by make_prompts
        source=relative,
        root=str(root),
        sha256=digest,
        group=group,
        offset=offset,
    )


def interleave(prompts: Sequence[MiniPrompt], contexts: Sequence[int]) -> list[MiniPrompt]:
    """Prompt 0 of every context (in --contexts order), then prompt 1 of every context, ..."""
    by_context = {c: [p for p in prompts if p.context == c] for c in contexts}
    out = []
    for row in range(max((len(v) for v in by_context.values()), default=0)):
        out += [v[row] for v in by_context.values() if row < len(v)]
    return out


def make_prompts(
    corpus: Corpus,
    tokenizer: Any,
    contexts: Sequence[int],
    requests: int | Mapping[int, int],
    *,
    reuse: bool = False,
    roots: Sequence[Path] | None = None,
) -> list[MiniPrompt]:
    pool = pool_of(corpus, tokenizer, roots)
    chosen = select(pool, contexts, requests, reuse)
    return [
        MiniPrompt(**{**asdict(p), "text": tokenizer.decode(p.ids)})  # type: ignore[arg-type]
        for p in chosen
    ]


def write_jsonl(prompts: Sequence[MiniPrompt], path: Path) -> None:
    write_text_atomic(
        path,
        "".join(
            json.dumps({"id": p.id, "prompt": p.text, "source": p.source}) + "\n" for p in prompts
        ),
    )


def write_record(prompts: Sequence[MiniPrompt], path: Path) -> None:
    """prompts.json: every prompt's file and token ids (what the run's figures came from)."""
    sources = [p.source for p in prompts]
    doc = {
        "prompts": [asdict(p) for p in prompts],
        "files": len(set(sources)),
        "files_shared": len(sources) - len(set(sources)),
        "by_group": {
            g: sum(1 for p in prompts if p.group == g) for g in (HELDOUT, HELDOUT_RULE, UNSEEN)
        },
    }
    write_text_atomic(path, json.dumps(doc) + "\n")


def sources_unique(prompts: Sequence[MiniPrompt]) -> bool:
    return len({p.source for p in prompts}) == len(prompts)
