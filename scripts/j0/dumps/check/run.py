"""`j0 dumps check`: every dumped step against J0's rule, with the selfcheck's reference.

Per request (load.group_requests), in step order, as the patch's kernels see it:

* format: every stepNNNN.pt holds exactly the patch's keys and dtypes; numbers have no gaps;
* counts: a prefill chunk samples nothing and rejects nothing, the chunk that ends the prompt
  samples one token, a decode step samples `T - num_rejected` tokens (vLLM's
  `_get_num_sampled_and_rejected_kernel`: num_rejected = num_logits - num_sampled);
  positions run without a hole; the next step of the request starts at this step's anchor
  position, `last valid position + 1` (reference.anchor_position);
* query block: positions `anchor_pos + k` (vLLM clamps them to max_model_len - 1), slot 0 the
  anchor, which comes back as the next step's first input id;
* J0 on: slot k > 0 holds the committed token at index `r mod L`, `L = last_valid_pos + 2`,
  `r = tl.randint(J0_SEED, req_state_idx * 64 + k)` (j0.reference.philox / reference). The
  committed tokens are rebuilt from the dumps exactly as the patch's `_ctx_pool_write_kernel`
  writes them: each step's inputs except the rejected ones at their positions, then the anchor
  (the next step's first input). The request slot is not dumped: every slot up to --max-slots
  is tried and the one the draws follow is reported. A draw at a position that no dumped step
  of this request wrote (a prefix-cache hit, a request whose first steps ran in batches, the
  start-up warm-up) reads whatever the slot's history held: it is UNVERIFIABLE, never a pass;
  except in a run of the prefix-safe variant (said by the server log's identity line, --log, or
  --variant) with the prompts' token ids given (--prompts): that file fills a request's positions
  below its start from the request's own tokens, so those draws are checked (own_prefix.py);
* J0 off: slot k > 0 holds the mask token (given, or the one value those slots hold).

Outcomes: PASS (exit 0), FAIL (exit 1, the first failures named: step file, slot, expected,
actual, why), UNVERIFIABLE (exit 2 unless allow_unverifiable: nothing failed, but some draws
could not be checked), and exit 2 for a folder that is not a dump folder or has nothing to check.

This module is the entry point, for the CLI and for other commands alike: `run_check(CheckOptions(
folder))` returns a CheckResult. The work is in the modules beside it: folder (the folder,
request by request), request (one request's steps and rebuilt history), steps, slot_inference
(which request slot), draws (each J0 draw), slot_history (what each slot's history holds),
findings and report (the report, its verdict and summary line).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from j0.dumps import bounds, load
from j0.dumps.check.folder import check_dumps
from j0.dumps.check.report import CheckReport, summary_line
from j0.errors import OK, USAGE, J0Error

DEFAULT_MAX_SLOTS = 1024  # request slots tried (vLLM's max_num_seqs is at most this in practice)
ERROR = "ERROR"  # CheckResult.verdict when the folder could not be checked at all


@dataclass(frozen=True)
class CheckOptions:
    """What `j0 dumps check` is asked, flag by flag (--json is the CLI's: it writes
    `CheckResult.report.to_json()`)."""

    folder: Path  # DIR, the dump folder
    seed: int | None = None  # --seed; None: J0_SEED in overlay/pins.env
    skip_requests: int = 0  # --skip-requests K: leave out the first K requests
    mask_token: int | None = None  # --mask-token; None: inferred from the J0-off draft slots
    max_slots: int | None = None  # --max-slots; None: DEFAULT_MAX_SLOTS
    allow_unverifiable: bool = False  # --allow-unverifiable: exit 0 for UNVERIFIABLE
    variant: str | None = None  # --variant article|prefix-safe: the speculator.py that ran
    log: Path | None = None  # --log FILE: the server's log, whose identity line says it
    prompts: Path | None = None  # --prompts FILE: the prompts' token ids (own_prefix.py)


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one `j0 dumps check`.

    ok: the check passed (exit code 0: PASS, or UNVERIFIABLE with allow_unverifiable).
    verdict: PASS | FAIL | UNVERIFIABLE | NOTHING TO CHECK, or ERROR when the folder could not be
      checked (not a dump folder, an unreadable step file, a bad option, torch missing); error
      then holds the message and report is None.
    exit_code: what `j0 dumps check` exits with (j0.errors: 0, 1, 2, 64, 69).
    summary: the last line `j0 dumps check` prints, as plain text: `VERDICT: N steps, ...
      (exit C)`, or `j0: error: MESSAGE` for ERROR.
    requests_checked, draws, draws_verified, draws_mismatched, draws_unverifiable: the draft slots
      of the checked requests (warm-up and skipped ones left out); failures: FAIL findings.
    report: the whole report (requests, findings; what --json writes).
    """

    verdict: str
    exit_code: int
    summary: str
    report: CheckReport | None = None
    error: str | None = None
    requests_checked: int = 0
    draws: int = 0
    draws_verified: int = 0
    draws_mismatched: int = 0
    draws_unverifiable: int = 0
    failures: int = 0

    @property
    def ok(self) -> bool:
        return self.exit_code == OK


def check_dir(
    root: Path,
    seed: int,
    skip_requests: int = 0,
    mask_token: int | None = None,
    max_slots: int = DEFAULT_MAX_SLOTS,
    allow_unverifiable: bool = False,
    variant: str | None = None,
    prompts: list[Any] | None = None,
) -> CheckReport:
    """Check a dump folder. Raises J0Error (exit 2) when it is not a dump folder."""
    dumps = load.load_dir(root, strict=True)
    return check_dumps(
        dumps, seed, skip_requests, mask_token, max_slots, allow_unverifiable, variant, prompts
    )


def run_check(options: CheckOptions) -> CheckResult:
    """`j0 dumps check` without the CLI: never raises J0Error, which becomes an ERROR result."""
    try:
        report = _checked(options)
    except J0Error as exc:
        return CheckResult(ERROR, exc.exit_code, f"j0: error: {exc}", error=str(exc))
    totals = report.totals()
    return CheckResult(
        verdict=report.verdict,
        exit_code=report.exit_code,
        summary=summary_line(report),
        report=report,
        requests_checked=totals.requests_checked,
        draws=totals.draws,
        draws_verified=totals.verified,
        draws_mismatched=totals.mismatched,
        draws_unverifiable=totals.unverifiable,
        failures=totals.failures,
    )


def _checked(options: CheckOptions) -> CheckReport:
    from j0 import errors as optional

    optional.require("torch", "j0 dumps", "dumps")
    optional.require("numpy", "j0 dumps", "dumps")
    if options.skip_requests < 0:
        raise J0Error(f"--skip-requests {options.skip_requests}: expected 0 or more", USAGE)
    if options.max_slots is not None and not 1 <= options.max_slots <= bounds.MAX_SLOTS:
        raise J0Error(
            f"--max-slots {options.max_slots}: expected 1 to {bounds.MAX_SLOTS} "
            "(the ceiling of request slots tried, docs/dumps.md)",
            USAGE,
        )
    if options.seed is not None and not 0 <= options.seed < 1 << 64:
        raise J0Error(f"--seed {options.seed}: expected 0 to 2^64 - 1 (Philox's 64-bit key)", USAGE)
    if options.mask_token is not None and not 0 <= options.mask_token < 1 << 31:
        raise J0Error(
            f"--mask-token {options.mask_token}: expected a token id, 0 to 2^31 - 1", USAGE
        )
    from j0.dumps.check.own_prefix import (
        log_read,
        read_prompts,
        refuse_other_server,
        settle_variant,
    )

    read = log_read(options.log) if options.log is not None else None
    variant = settle_variant(options.variant, read)
    prompts = read_prompts(options.prompts) if options.prompts is not None else None
    seed = options.seed
    if seed is None and read is not None:
        seed = read.seed  # the plugin's seed= (None: the image's file)
    if seed is None:
        from j0.pins import load_pins

        seed = load_pins().j0_seed
    report = check_dir(
        options.folder,
        seed,
        skip_requests=options.skip_requests,
        mask_token=options.mask_token,
        max_slots=options.max_slots or DEFAULT_MAX_SLOTS,
        allow_unverifiable=options.allow_unverifiable,
        variant=variant,
        prompts=prompts,
    )
    refuse_other_server(report.j0, read, options.folder)
    return report
