"""What bench makes of measured requests: acceptance (acceptance length by both definitions, the
histogram, per-step data by context length) and roofline (the decode roofline at batch 1)."""
