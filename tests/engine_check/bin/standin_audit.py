"""The stand-in's J0 audit records and preemptions (vllm_serve_standin.py, J0 on with
VLLM_DFLASH_AUDIT=DIR): DIR/audit-<pid>.jsonl in the audited speculator.py's format
(overlay/jetspec-j0-audit.patch, docs/overlay.md "The J0 audit"): a `start` line at start-up, then
one `step` line per engine step of our simulated engine (tests/servers/vllm/engine.py), written
before the step's tokens go out, as the audit writes its line before propose returns. The stand-in
runs one request per step, so each line holds one request in its request slot, all of its history
and draws matching.

Knobs: STANDIN_AUDIT_FAULT=N (the steps of requests with an N-token prompt record one history
row and one draw foreign, as a J0 history of another request would: a failing audit);
--num-gpu-blocks-override B counts a preemption in vllm:num_preemptions whenever a request is
admitted while the requests running need more than B blocks of 16 tokens (prompt + max_tokens),
and logs it; each prefill then takes PREFILL_DELAY s, so that requests sent at once overlap.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from servers.vllm.engine import SimulatedEngine
from servers.vllm.records import RequestRecord

BLOCK = 16
SLOTS = 4
PREFILL_DELAY = 0.1  # seconds, with --num-gpu-blocks-override


class AuditWriter:
    def __init__(self, folder: Path | None, fault_prompt: int | None, blocks: int | None) -> None:
        self.path = None if folder is None else folder / f"audit-{os.getpid()}.jsonl"
        self.fault_prompt = fault_prompt
        self.blocks = blocks
        self.step = 0
        self.running: dict[int, int] = {}  # request index -> slot
        self.lock = threading.Lock()
        if self.path is not None:
            folder.mkdir(parents=True, exist_ok=True)  # type: ignore[union-attr]
            self.write({"record": "start", "ctx_noise": True, "pool": [SLOTS, 0]})

    def write(self, record: dict[str, Any]) -> None:
        assert self.path is not None
        with self.path.open("a") as out:
            out.write(json.dumps(record) + "\n")

    def admitted(self, engine: SimulatedEngine, record: RequestRecord) -> None:
        with self.lock:
            used = set(self.running.values())
            self.running[record.index] = next(s for s in range(SLOTS * 4) if s not in used)
            if self.blocks is not None:
                need = sum(
                    -(-(r.prompt_tokens + r.max_tokens) // BLOCK)
                    for r in engine.records
                    if r.index in self.running
                )
                if need > self.blocks:
                    engine.counters[record.engine].preemptions += 1
                    print(f"j0-standin: preempted at request {record.request_id}", flush=True)

    def finished(self, record: RequestRecord) -> None:
        with self.lock:
            self.running.pop(record.index, None)

    def stepped(self, record: RequestRecord, drafted: int, context: int) -> None:
        if self.path is None:
            return
        with self.lock:
            slot = self.running.get(record.index, 0)
            bad = self.fault_prompt is not None and record.prompt_tokens == self.fault_prompt
            first = []
            if bad:
                first = [
                    {"what": "history", "request": 0, "slot": slot, "pos": 3, "history": 17,
                     "own": 18},
                    {"what": "draw", "request": 0, "slot": slot, "k": 1, "index": 3, "drawn": 17,
                     "own": 18, "rows_holding_drawn": [(slot + 1) % SLOTS]},
                ]  # fmt: skip
            self.write(
                {
                    "record": "step",
                    "step": self.step,
                    "requests": 1,
                    "req_ids": [record.request_id],
                    "slots": [slot],
                    "rows_checked": 1,
                    "positions_checked": context + 1,
                    "draws_checked": max(drafted - 1, 0),
                    "row_mismatches": int(bad),
                    "mismatched_positions": int(bad),
                    "draw_mismatches": int(bad),
                    "first": first,
                }
            )
            self.step += 1


def install(writer: AuditWriter) -> None:
    """Hook the writer into our simulated engine's request and step bookkeeping."""
    new_record, observe_step, finish = (
        SimulatedEngine.new_record,
        SimulatedEngine.observe_step,
        SimulatedEngine.finish,
    )

    def new_record_hooked(self: SimulatedEngine, **kwargs: Any) -> RequestRecord | None:
        record = new_record(self, **kwargs)
        if record is not None:
            writer.admitted(self, record)
        return record

    def observe_step_hooked(
        self: SimulatedEngine, record: RequestRecord, drafted: int, accepted: int, context: int
    ) -> None:
        writer.stepped(record, drafted, context)
        observe_step(self, record, drafted, accepted, context)

    def finish_hooked(self: SimulatedEngine, record: RequestRecord, reason: str) -> None:
        writer.finished(record)
        finish(self, record, reason)

    SimulatedEngine.new_record = new_record_hooked  # type: ignore[method-assign]
    SimulatedEngine.observe_step = observe_step_hooked  # type: ignore[method-assign]
    SimulatedEngine.finish = finish_hooked  # type: ignore[method-assign]
