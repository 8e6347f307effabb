"""The serving scenarios of `j0 engine-check --scenario` and scripts/engine-scenarios-h200.sh:
sender (what each forces, sent to one server), record (scenarios.json as a type), table (the
results over several runs) and check (--scenario on the engine check's own two servers)."""
