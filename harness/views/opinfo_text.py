"""`python -m harness opinfo-stats`: what op_db holds, how many samples are cases, what is not and why."""
from __future__ import annotations


def render_opinfo_stats(manifests: dict[str, dict], exclusions: dict[str, dict[str, int]],
                        cases: dict[str, int], rules: dict[str, str]) -> str:
    lines = []
    for dtype, manifest in manifests.items():
        ops = manifest["ops"]
        listed = sum(len(op["samples"].get(dtype, ())) for op in ops)
        lines.append(f"torch {manifest['torch']}, {dtype}: {len(ops)} OpInfo entries, "
                     f"{sum(dtype in op['dtypes'] for op in ops)} with a CPU kernel at {dtype}, {listed} samples")
    lines += [f"cases: {n} ({family})" for family, n in cases.items()]
    lines.append("not cases, by rule (ops, samples):")
    width = max(map(len, rules))
    for rule, why in rules.items():
        counts = exclusions.get(rule, {"ops": 0, "samples": 0})
        if counts["ops"]:
            lines.append(f"  {rule:<{width}}  {counts['ops']:>4} ops  {counts['samples']:>6} samples  {why}")
    return "\n".join(lines) + "\n"
