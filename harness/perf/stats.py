"""The statistics of timing samples, in pure Python: the controller side imports no numpy, and the
worker's stopping rule and the comparisons must agree to the digit.

* A median's interval is distribution-free: two order statistics whose ranks the binomial
  distribution picks, so no assumption about the shape of the noise (timings are skewed).
* A ratio of medians (a speedup, two lowerings' times) gets a percentile bootstrap: the samples are
  resampled, the ratio recomputed, its 2.5th and 97.5th percentiles taken. Interleaved samples
  (eager, compiled, eager, ...) are resampled as pairs, so drift that hit both stays paired.
* A case timed in several rounds (--perf-rounds, each round a fresh worker) has the round as its
  unit: one figure per round, their geometric mean, and Student's t interval over the rounds in log
  space (two sets of rounds: Welch's). The samples of one process cannot show the noise between
  processes; a few rounds can, and with few of them the interval is wide, as it should be.
* A geomean's interval adds the cases' own uncertainties in log space: it says how well these
  cases were measured, not how another set of cases would come out.
"""
from __future__ import annotations

import math
import random
from typing import Callable, Sequence

Z95 = 1.959963984540054   # the normal quantile of a two-sided 95% interval
RESAMPLES = 1000
EXACT_UP_TO = 100         # samples; beyond, the normal approximation (at most one rank wider)
SEED = 20261203           # resampling is seeded: the same samples give the same interval
# Student's t quantile of a two-sided 95% interval for 1 to 30 degrees of freedom; beyond, Z95
# (at most 4% narrower).
T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
       2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
       2.045, 2.042)


def figure(x: float) -> float:
    """Four significant digits: timing noise is far coarser, and reports stay small."""
    return float(f"{x:.4g}")


def quantile(ordered: Sequence[float], q: float) -> float:
    """The q-quantile of sorted values, linearly interpolated."""
    position = (len(ordered) - 1) * q
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def median(values: Sequence[float]) -> float:
    return quantile(sorted(values), 0.5)


def median_interval(values: Sequence[float]) -> tuple[float, float]:
    """The 95% distribution-free interval of the median: the order statistics of ranks j and n-1-j
    (0-based), j the largest with P(Binomial(n, 1/2) <= j) <= 2.5% (its normal approximation above
    EXACT_UP_TO samples). Below 6 samples no such j exists: the whole range."""
    ordered = sorted(values)
    n = len(ordered)
    if n > EXACT_UP_TO:
        j = math.floor((n - Z95 * math.sqrt(n)) / 2) - 1
    else:
        j, below = -1, 0   # below: P(X <= j) * 2^n, in integers
        while (below + math.comb(n, j + 1)) * 40 <= 2 ** n:
            j += 1
            below += math.comb(n, j)
    j = max(j, 0)
    return ordered[j], ordered[n - 1 - j]


def relative_half_width(values: Sequence[float]) -> float:
    """Half the median's interval over the median: the stopping rule's precision."""
    low, high = median_interval(values)
    middle = median(values)
    return (high - low) / 2 / middle if middle > 0 else math.inf


def summary(samples: Sequence[float]) -> dict:
    """What a report keeps of one side's samples (seconds per call), the samples included."""
    ordered = sorted(samples)
    low, high = median_interval(ordered)
    return {"count": len(ordered), "min": figure(ordered[0]), "q1": figure(quantile(ordered, 0.25)),
            "median": figure(quantile(ordered, 0.5)), "q3": figure(quantile(ordered, 0.75)),
            "low": figure(low), "high": figure(high), "samples": [figure(s) for s in samples]}


def bootstrap(statistic: Callable[..., float], *groups: Sequence, resamples: int = RESAMPLES) -> tuple[float, float]:
    """The 95% percentile interval of `statistic(*groups)`, each group resampled with replacement
    on its own (a group's items may be pairs: they stay together)."""
    rng = random.Random(SEED)
    values = sorted(statistic(*(rng.choices(group, k=len(group)) for group in groups)) for _ in range(resamples))
    return quantile(values, 0.025), quantile(values, 0.975)


def relative_time(pairs: Sequence[tuple[float, float]]) -> float:
    """The compiled side's median over eager's, of (eager, compiled) pairs: 1/speedup."""
    return median([c for _, c in pairs]) / median([e for e, _ in pairs])


def speedup(pairs: Sequence[tuple[float, float]]) -> dict:
    """Eager's median over the compiled side's, with its bootstrap interval over the pairs."""
    low, high = bootstrap(relative_time, pairs)
    return {"value": figure(1 / relative_time(pairs)), "low": figure(1 / high), "high": figure(1 / low)}


def ratio(a: Sequence, b: Sequence, measure: Callable[[Sequence], float], min_change: float = 0.0) -> dict:
    """B's measure over A's (a time each: below 1, B is faster), its interval, and whether the
    interval lies wholly beyond a change of `min_change` (a fraction) either way: two runs differ
    by more than one run's samples show (pyperf's compare_to has --min-speed for this)."""
    low, high = bootstrap(lambda x, y: measure(y) / measure(x), a, b)
    return _ratio_figures(measure(b) / measure(a), low, high, min_change)


def _ratio_figures(value: float, low: float, high: float, min_change: float) -> dict:
    """A ratio, its interval, and whether the interval lies wholly beyond `min_change` either way."""
    return {"ratio": figure(value), "low": figure(low), "high": figure(high),
            "significant": low > 1 + min_change or high < 1 / (1 + min_change)}


def t95(freedom: float) -> float:
    """The t quantile for `freedom` degrees of freedom, rounded down (a wider interval)."""
    whole = max(1, math.floor(freedom))
    return T95[whole - 1] if whole <= len(T95) else Z95


def _log_moments(values: Sequence[float]) -> tuple[float, float]:
    """The mean of the logs and its squared standard error."""
    logs = [math.log(v) for v in values]
    centre = sum(logs) / len(logs)
    variance = sum((x - centre) ** 2 for x in logs) / (len(logs) - 1)
    return centre, variance / len(logs)


def over_rounds(values: Sequence[float]) -> dict:
    """Rounds' figures (two or more, each positive): their geometric mean and its t interval."""
    centre, error2 = _log_moments(values)
    half = t95(len(values) - 1) * math.sqrt(error2)
    return {"value": figure(math.exp(centre)), "low": figure(math.exp(centre - half)),
            "high": figure(math.exp(centre + half))}


def ratio_of_rounds(a: Sequence[float], b: Sequence[float], min_change: float = 0.0) -> dict:
    """B's rounds over A's (a time per round, two or more rounds a side): the ratio of their
    geometric means, Welch's t interval, and significance as in `ratio`."""
    (centre_a, error_a), (centre_b, error_b) = _log_moments(a), _log_moments(b)
    error2 = error_a + error_b
    # Welch-Satterthwaite degrees of freedom (rounds without spread have a zero-width interval anyway).
    freedom = (error2 ** 2 / (error_a ** 2 / (len(a) - 1) + error_b ** 2 / (len(b) - 1))
               if error_a or error_b else len(a) + len(b) - 2)
    difference, half = centre_b - centre_a, t95(freedom) * math.sqrt(error2)
    return _ratio_figures(math.exp(difference), math.exp(difference - half), math.exp(difference + half),
                          min_change)


def geomean(figures: Sequence[dict]) -> dict | None:
    """The geometric mean of figures {"value", "low", "high"} (speedups, ratios), with an interval
    from each one's own: its log-space standard error, (ln high - ln low) / (2 * 1.96)."""
    usable = [f for f in figures if f["value"] > 0 and f["low"] > 0 and f["high"] > 0]
    if not usable:
        return None
    n = len(usable)
    centre = sum(math.log(f["value"]) for f in usable) / n
    error = math.sqrt(sum(((math.log(f["high"]) - math.log(f["low"])) / (2 * Z95)) ** 2 for f in usable)) / n
    return {"value": figure(math.exp(centre)), "low": figure(math.exp(centre - Z95 * error)),
            "high": figure(math.exp(centre + Z95 * error)), "count": n}
