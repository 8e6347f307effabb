"""`j0 mini train OUT`, in order: the corpus (OUT/corpus.json), the tokenizer, the target, then
the mask drafter and the J0 drafter; each model a folder vLLM serves (weights, config.json, the
tokenizer), each training a log (OUT/logs/NAME.jsonl), the drafters' per-slot scores on held-out
windows, and OUT/mini.json: what was made, with the sizes, seeds, times and every file's sha256."""

from __future__ import annotations

import json
import platform
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from j0.edge.atomic import claimed, sha256_file, write_text_atomic
from j0.edge.fields import write_document
from j0.errors import USAGE, J0Error, require
from j0.mini.manifest import MADE_BY, MINI_JSON, DrafterRecord, MiniManifest, TargetRecord
from j0.mini.sizes import FULL, SMOKE, Sizes
from j0.mini.train.batch import DRAFT_DATA, INITS, LABELS
from j0.mini.train.positions import write_positions
from j0.mini.train.temperature import MAX_TEMPERATURE
from j0.terminal import sink

DRAFTERS = INITS  # one drafter per block initialisation


@dataclass(frozen=True)
class TrainOptions:
    out: Path
    budget: float | None = None  # seconds per model; None: the sizes' default
    smoke: bool = False
    seed: int = 0
    device: str = "auto"
    labels: str = "target"  # the drafters' labels: data | target (the target's greedy argmax)
    gamma: float = 7.0  # slot weights exp(-(k-1)/gamma) (DFlash's for blocks of 16); 0: equal
    progress: bool = True
    roots: tuple[Path, ...] | None = None  # where the corpus comes from (None: stdlib + site)
    anchors: int | None = None  # anchors per drafter training sequence (None: the sizes')
    draft_layers: int | None = None  # drafter depth (None: the sizes')
    draft_lr: float | None = None  # drafter peak learning rate (None: the sizes')
    draft_data: str = "generated"  # text | generated (the target's own continuations)
    temperature: float | None = None  # the sampling temperature; None: chosen by the gate
    rows: int | None = None  # --draft-data generated: rows of the target's text (None: sizes')
    target_budget: float | None = None  # the target's seconds (None: the sizes')
    gen_budget: float | None = None  # at most this many seconds for the rows (None: the sizes')
    compile: bool = True  # torch.compile the target's training on CUDA
    corpus_mb: float | None = None  # training text in MB (None: the sizes')


@dataclass
class TrainResult:
    out: Path
    manifest: dict[str, Any] = field(default_factory=dict)

    @property
    def folders(self) -> dict[str, Path]:
        return {name: self.out / name for name in ("target", *drafter_folders())}

    def to_json(self) -> dict[str, Any]:
        """`j0 mini train --json`: the folder, its models' folders and mini.json's manifest."""
        return {
            "out": str(self.out),
            "folders": {name: str(path) for name, path in self.folders.items()},
            "manifest": self.manifest,
        }


def drafter_folders() -> list[str]:
    return [f"drafter-{init}" for init in DRAFTERS]


def check(options: TrainOptions) -> Sizes:
    for flag, value in (
        ("--budget", options.budget),
        ("--target-budget", options.target_budget),
        ("--gen-budget", options.gen_budget),
        ("--corpus-mb", options.corpus_mb),
    ):
        if value is not None and value <= 0:
            raise J0Error(f"{flag} {value}: expected a number > 0", USAGE)
    if options.labels not in LABELS:
        raise J0Error(f"--labels {options.labels}: expected data or target", USAGE)
    if options.draft_data not in DRAFT_DATA:
        raise J0Error(f"--draft-data {options.draft_data}: expected text or generated", USAGE)
    if options.temperature is not None and not 0 <= options.temperature <= MAX_TEMPERATURE:
        raise J0Error(
            f"--temperature {options.temperature}: expected auto or 0 to {MAX_TEMPERATURE}", USAGE
        )
    if options.rows is not None and options.rows < 1:
        raise J0Error(f"--rows {options.rows}: expected a whole number, 1 or more", USAGE)
    sizes = SMOKE if options.smoke else FULL
    if options.corpus_mb is not None:
        sizes = replace(sizes, corpus_bytes=round(options.corpus_mb * 1_000_000))
    changes = {
        name: value
        for name, value in (
            ("anchors", options.anchors),
            ("draft_layers", options.draft_layers),
            ("draft_lr", options.draft_lr),
        )
        if value is not None
    }
    for name, value in changes.items():
        if value <= 0:
            raise J0Error(f"--{name.replace('_', '-')} {value}: expected a value > 0", USAGE)
    if changes.get("anchors", 0) > sizes.draft_seq - sizes.block:
        raise J0Error(
            f"--anchors {changes['anchors']}: expected at most {sizes.draft_seq - sizes.block} "
            f"(sequences of {sizes.draft_seq}, blocks of {sizes.block})",
            USAGE,
        )
    return replace(sizes, **changes)


def check_out(out: Path) -> None:
    """OUT must be new or empty (nothing is overwritten; judged under the claim on it:
    run_train); else the J0Error (exit 64) that says what it holds and what to do: a finished
    training, an unfinished one, or other files."""
    if not out.exists():
        return
    if not out.is_dir():
        raise J0Error(f"{out}: a file; expected a new folder (nothing is overwritten)", USAGE)
    held = sorted(p.name + ("/" if p.is_dir() else "") for p in out.iterdir())
    if not held:
        return
    listed = ", ".join(held[:8]) + (f" and {len(held) - 8} more" if len(held) > 8 else "")
    ours = {"corpus.json", "logs/", "target/", *(f"{name}/" for name in drafter_folders())}
    if MINI_JSON in held:
        why = (
            f"holds a finished `j0 mini train` ({MINI_JSON}): serve it with `j0 mini run {out} "
            "--here`, or name a new folder to train again"
        )
    elif set(held) <= ours:
        why = (
            f"holds an unfinished `j0 mini train` ({listed}; no {MINI_JSON}: it was stopped "
            f"before the end, killed say); training does not resume: remove it (`rm -r {out}`) "
            "and run the same command again, or name a new folder"
        )
    else:
        why = f"is not empty (it holds {listed}); name a new or empty folder"
    raise J0Error(f"{out}: {why} (nothing is overwritten)", USAGE)


def files_of(out: Path) -> dict[str, str]:
    return {
        p.relative_to(out).as_posix(): sha256_file(p)
        for p in sorted(out.rglob("*"))
        if p.is_file() and p.name != "mini.json"
    }


def budgets_of(options: TrainOptions, sizes: Sizes) -> dict[str, float]:
    """Seconds for each stage: the target, the generated rows (at most), each drafter. --budget
    alone sets them all (as before issue 54); --target-budget and --gen-budget set theirs."""
    drafter = options.budget if options.budget is not None else sizes.budget_s
    fallback = options.budget
    return {
        "target": options.target_budget or fallback or sizes.target_budget_s,
        "generate": options.gen_budget or fallback or sizes.gen_budget_s,
        "drafter": drafter,
    }


def run_train(options: TrainOptions, say: Any = print) -> TrainResult:
    """Train into OUT (new or empty); where the run stops before the end (Ctrl-C, SIGTERM, an
    error) what it made is removed, OUT left as it was, so that the same command runs again."""
    for module in ("torch", "transformers", "tokenizers", "dflash", "tqdm"):
        require(module, "j0 mini train", extra="mini")
    sizes = check(options)
    # OUT is claimed until the last write: a second `j0 mini train` on it is refused (exit 64),
    # and whether it is empty is judged under the claim.
    with claimed(options.out, "OUT"):
        check_out(options.out)
        new_folder = not options.out.exists()
        try:
            return train(options, sizes, say)
        except BaseException:
            undo(options.out, new_folder)
            raise


def undo(out: Path, new_folder: bool) -> None:
    """Remove what an unfinished run made in OUT (new, or empty before it: all of it is the
    run's), and say so on stderr."""
    import shutil

    if new_folder:
        shutil.rmtree(out, ignore_errors=True)
    elif out.is_dir():
        for path in out.iterdir():
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
    was = "a new folder, removed" if new_folder else "empty before, emptied again"
    sink.warn(
        f"j0 mini train: stopped before the end: removed what it had made in {out} ({was}); "
        "the same command starts again",
        flush=True,
    )


def train(options: TrainOptions, sizes: Sizes, say: Any) -> TrainResult:
    """The training itself, into OUT (claimed and judged empty by run_train)."""
    import torch
    from transformers.utils import logging as transformers_logging

    from j0.mini import device as device_mod
    from j0.mini.train import corpus as corpus_mod
    from j0.mini.train.target import save_target, train_target

    # transformers' "Writing model shards" bars: escaped "\r" updates in a log, noise anywhere
    transformers_logging.disable_progress_bar()
    device = device_mod.pick(options.device)
    budgets = budgets_of(options, sizes)
    out = options.out
    (out / "logs").mkdir(parents=True, exist_ok=True)
    times: dict[str, float] = {}
    started = time.monotonic()

    roots = list(options.roots) if options.roots else corpus_mod.default_roots()
    corpus = corpus_mod.collect(roots, sizes.corpus_bytes, sizes.min_heldout_files)
    corpus_mod.write(corpus, out / "corpus.json")
    say(
        f"==> corpus: {len(corpus.train)} training files ({sum(f.size for f in corpus.train)} "
        f"bytes), {len(corpus.heldout)} held out; OUT/corpus.json"
    )
    tokenizer, train_tokens, held_tokens = tokenize(corpus, sizes, times, say)

    say(f"==> target on {device}: {budgets['target']:.0f} s")
    target, target_run = train_target(
        train_tokens,
        held_tokens,
        sizes,
        budgets["target"],
        device,
        options.seed,
        out / "logs" / "target.jsonl",
        options.progress,
        compile_model=options.compile,
    )
    save_target(target, out / "target")
    from j0.mini.train import tokenizer as tok_mod

    tok_mod.save(tokenizer, out / "target")
    write_positions(out / "logs", target_run.by_position)
    if device == "cpu":
        target.to(torch.float32)
    target.eval()
    target.requires_grad_(False)
    times["target_s"] = round(target_run.seconds, 1)
    rate = target_run.throughput
    mfu = f", MFU {rate['mfu']:.1%}" if rate.get("mfu") is not None else ""
    say(
        f"    {target_run.steps} steps ({target_run.compiled}), loss "
        f"{target_run.last_loss:.3f}, held-out loss {target_run.heldout_loss:.3f}; "
        f"{rate.get('tokens_per_s', 0):,.0f} tokens/s, {rate.get('tflops', 0)} TFLOP/s{mfu}"
    )
    say(
        "    held-out loss by position: "
        + ", ".join(f"{b.start}-{b.to}: {b.loss:.3f}" for b in target_run.by_position)
    )

    sampling = choose_temperature(options, target, train_tokens, sizes, device, say)
    times["temperature_s"] = sampling["seconds"]
    rows, generated = make_rows(
        options, target, train_tokens, sizes, budgets, device, sampling, say
    )
    if generated is not None:
        times["generate_s"] = generated["seconds"]
        say(
            f"    {generated['rows']} rows of {sizes.draft_seq} tokens in "
            f"{generated['seconds']} s ({generated['rows_per_s']} rows/s)"
        )
    drafters = train_drafters(
        options,
        target,
        tokenizer,
        train_tokens,
        held_tokens,
        sizes,
        budgets,
        device,
        rows,
        float(sampling["temperature"]),
        times,
        say,
    )
    plot_training_curves(out / "logs", say)
    times["total_s"] = round(time.monotonic() - started, 1)
    manifest = MiniManifest(
        made_by=MADE_BY,
        smoke=options.smoke,
        device=device,
        torch=torch.__version__,
        python=platform.python_version(),
        seed=options.seed,
        budget_s_per_model=budgets["drafter"],
        budgets=budgets,
        sizes=sizes.to_json(),
        labels=options.labels,
        gamma=options.gamma,
        draft_data=options.draft_data,
        sampling=sampling,
        generated=generated,
        target=TargetRecord(
            steps=target_run.steps,
            seconds=round(target_run.seconds, 1),
            last_loss=round(target_run.last_loss, 4),
            heldout_loss=round(target_run.heldout_loss, 4),
            seed=options.seed,
            heldout_by_position=[b.to_json() for b in target_run.by_position],
            throughput=target_run.throughput,
            compiled=target_run.compiled,
            warm_s=target_run.warm_s,
        ),
        drafters=drafters,
        times=times,
        files=files_of(out),
    ).to_json()
    write_document(out / MINI_JSON, manifest)
    say(f"==> wrote {out} in {times['total_s']} s (OUT/mini.json lists every file's sha256)")
    return TrainResult(out, manifest)


def tokenize(corpus: Any, sizes: Sizes, times: dict[str, float], say: Any) -> tuple[Any, Any, Any]:
    """The tokenizer (learnt from the first `tokenizer_bytes` of training text) and the training
    and held-out token streams."""
    from j0.mini.train import tokenizer as tok_mod
    from j0.mini.train.data import stream

    train_texts, held_texts = corpus.texts(False), corpus.texts(True)
    mark = time.monotonic()
    learn_from, size = [], 0
    for text in train_texts:
        learn_from.append(text)
        size += len(text)
        if size >= sizes.tokenizer_bytes:
            break
    tokenizer = tok_mod.train_tokenizer(learn_from, sizes.vocab)
    train_tokens, held_tokens = stream(tokenizer, train_texts), stream(tokenizer, held_texts)
    times["tokenizer_s"] = round(time.monotonic() - mark, 1)
    say(
        f"==> tokenizer: vocab {tokenizer.get_vocab_size()} (from {len(learn_from)} files); "
        f"{train_tokens.numel()} training tokens, {held_tokens.numel()} held out "
        f"({times['tokenizer_s']} s)"
    )
    return tokenizer, train_tokens, held_tokens


def make_rows(
    options: TrainOptions,
    target: Any,
    train_tokens: Any,
    sizes: Sizes,
    budgets: dict[str, float],
    device: str,
    sampling: dict[str, Any],
    say: Any,
) -> tuple[Any, dict[str, Any] | None]:
    """--draft-data generated: the target's own continuations (rows) and their record; else
    (None, None)."""
    if options.draft_data != "generated":
        return None, None
    import torch

    from j0.mini.train.generate import generate_rows

    temperature = float(sampling["temperature"])
    count = options.rows or sizes.gen_rows
    say(
        f"==> the target's own text: {count} continuations at temperature {temperature} "
        f"(at most {budgets['generate']:.0f} s)"
    )
    mark = time.monotonic()
    rows = generate_rows(
        target,
        train_tokens,
        sizes,
        budgets["generate"],
        device,
        torch.Generator().manual_seed(options.seed + 50),
        count=count,
        temperature=temperature,
        seed=options.seed + 51,
    )
    seconds = time.monotonic() - mark
    return rows, {
        "rows": int(rows.shape[0]),
        "rows_asked": count,
        "tokens": int(rows.numel()),
        "seconds": round(seconds, 1),
        "rows_per_s": round(rows.shape[0] / seconds, 1) if seconds > 0 else None,
        "prompt_tokens": sizes.gen_prompt,
        "temperature": temperature,
    }


def train_drafters(
    options: TrainOptions,
    target: Any,
    tokenizer: Any,
    train_tokens: Any,
    held_tokens: Any,
    sizes: Sizes,
    budgets: dict[str, float],
    device: str,
    rows: Any,
    temperature: float,
    times: dict[str, float],
    say: Any,
) -> dict[str, DrafterRecord]:
    """Each drafter trained, scored on held-out rows and text, and saved."""
    import torch

    from j0.mini.train import tokenizer as tok_mod
    from j0.mini.train.data import windows
    from j0.mini.train.drafter import DraftRecipe, save_drafter, score_slots, train_drafter
    from j0.mini.train.generate import continue_rows, device_generator

    out = options.out
    held_prompts = torch.Generator().manual_seed(options.seed + 60)
    held_rows = continue_rows(
        target,
        windows(held_tokens, sizes.gen_prompt, sizes.held_rows, held_prompts),
        sizes.draft_seq,
        device,
        temperature,
        device_generator(device, options.seed + 61) if temperature > 0 else None,
    ).cpu()
    drafters: dict[str, DrafterRecord] = {}
    budget = budgets["drafter"]
    for number, init in enumerate(DRAFTERS):
        recipe = DraftRecipe(init=init, labels=options.labels, gamma=options.gamma)
        say(f"==> drafter {init} on {device}: {budget:.0f} s, labels {options.labels}")
        seed = options.seed + 100 * (number + 1)
        drafter, run = train_drafter(
            target,
            train_tokens,
            sizes,
            recipe,
            budget,
            device,
            seed,
            out / "logs" / f"drafter-{init}.jsonl",
            options.progress,
            rows,
            held_rows if rows is not None else None,
        )
        scores = score_slots(drafter, target, held_tokens, sizes, init, device, seed, held_rows)
        folder = out / f"drafter-{init}"
        save_drafter(drafter, folder)
        tok_mod.save(tokenizer, folder)
        write_text_atomic(
            folder.parent / "logs" / f"slots-{init}.json",
            json.dumps(asdict(scores), indent=1) + "\n",
        )
        passes = round(run.rows_seen / rows.shape[0], 2) if rows is not None else None
        drafters[init] = DrafterRecord(
            recipe=asdict(recipe),
            seed=seed,
            steps=run.steps,
            seconds=round(run.seconds, 1),
            last_loss=round(run.last_loss, 4),
            heldout_slots=asdict(scores),
            rows_seen=run.rows_seen,
            passes=passes,
            rows_per_s=run.rows_per_s,
            tokens_per_s=run.tokens_per_s,
        )
        times[f"drafter_{init}_s"] = round(run.seconds, 1)
        over = f", {passes} passes over the rows" if passes is not None else ""
        say(
            f"    {run.steps} steps ({run.rows_per_s} rows/s{over}), loss {run.last_loss:.3f}; "
            f"held-out slot 1: {scores.accuracy_vs_data[0]:.3f} vs the text, "
            f"{scores.agreement_with_target[0]:.3f} with the target; chain estimate "
            f"{scores.chain_estimate}"
        )
        del drafter
    return drafters


def choose_temperature(
    options: TrainOptions, target: Any, tokens: Any, sizes: Sizes, device: str, say: Any
) -> dict[str, Any]:
    """--temperature, or the lowest one of j0.mini.train.temperature's grid at which the target's
    continuations of its training text are no loop (with the grid's figures)."""
    from j0.mini.train import temperature as temperature_mod

    mark = time.monotonic()
    if options.temperature is not None:
        sampling: dict[str, Any] = {
            "temperature": options.temperature,
            "passed": None,
            "chosen_by": "--temperature",
        }
    else:
        sampling = {
            **temperature_mod.pick(target, tokens, sizes, device, options.seed + 40),
            "chosen_by": "the repetition gate (j0.mini.train.temperature)",
        }
        shares = ", ".join(
            f"{g['temperature']}: {g['share_without_loop']:.2f}" for g in sampling["grid"]
        )
        say(
            f"==> temperature {sampling['temperature']} (share of continuations without a loop: "
            f"{shares}; needed {sampling['share_needed']})"
        )
    sampling["seconds"] = round(time.monotonic() - mark, 1)
    return sampling


def plot_training_curves(logs: Path, say: Any) -> None:
    """OUT/logs/curves.png (j0.mini.train.curves), where matplotlib is installed."""
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        say("    curves not plotted: matplotlib is not installed (pip install -e '.[mini]')")
        return
    from j0.mini.train.curves import plot_curves

    say(f"==> curves: {plot_curves(logs)}")
