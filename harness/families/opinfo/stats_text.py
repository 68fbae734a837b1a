"""`python -m harness opinfo-stats`: what op_db holds, how many samples are cases, what is not and why."""
from __future__ import annotations


def render_opinfo_stats(manifests: dict[str, dict], families: dict[str, tuple[int, dict[str, dict[str, int]]]],
                        rules: dict[str, str]) -> str:
    """`families`: family -> (its number of cases, rule -> {"ops", "samples"} left out)."""
    lines = []
    for dtype, manifest in manifests.items():
        ops = manifest["ops"]
        listed = sum(len(op["samples"].get(dtype, ())) for op in ops)
        lines.append(f"torch {manifest['torch']}, {dtype}: {len(ops)} OpInfo entries, "
                     f"{sum(dtype in op['dtypes'] for op in ops)} with a CPU kernel at {dtype}, {listed} samples")
    width = max(map(len, rules))
    for family, (cases, excluded) in families.items():
        lines.append(f"{family}: {cases} cases; not cases, by rule:")
        for rule, why in rules.items():
            counts = excluded.get(rule, {"ops": 0, "samples": 0})
            if counts["ops"]:
                lines.append(f"  {rule:<{width}}  {counts['ops']:>4} ops  {counts['samples']:>6} samples  {why}")
    return "\n".join(lines) + "\n"
