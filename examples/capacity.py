"""How many exponential mechanisms fit a (1, 10⁻⁶) budget (Dong, "Exponential
mechanisms: what's wrong with sensitivity?", differentialprivacy.org).

The mechanism picks y with P[y] ∝ exp(ε0·q(y)), ε0 = 0.025, for counts q (score range 1: adding
a person raises scores, never lowers them): ``sdp.Exponential(0.025, monotonic=True)``. The
classical analysis goes by sensitivity (McSherry–Talwar 2007: 2ε0 = 0.05-DP); by range it is
ε0-DP, and better, ε0-bounded range (Rogers–Steinke 2021), which composes far better
(Dong–Durfee–Rogers 2020). The number k of such mechanisms that fit the budget, by analysis:

* classical, read by sensitivity as 0.05-DP: basic (Dwork–Roth Thm 3.16) 20, advanced
  (Dwork–Rothblum–Vadhan 2010) 13, optimal for pure DP (Kairouz–Oh–Viswanath 2015) 26;
* classical, read by range as 0.025-DP: basic 40, advanced 54, optimal (KOV) 92;
* bounded range, adaptively: zCDP with ρ ≤ ε0²/8 per mechanism 311, the exact Rényi curve 313;
* optimal for a batch fixed in advance: DDR20's optimal composition of ε0-BR mechanisms 359.

It prints that table (every count is the largest k whose ε at δ = 10⁻⁶, as certified by that
analysis, is at most 1: basic composition's (k·0.05, 0)-DP is read at δ = 10⁻⁶ through the
ε-DP privacy profile, so 20 fit although 20 × fl(0.05) exceeds 1 by 6e-17; ``sharpdp capacity``'s
*textbook* row asks Σε ≤ 1 exactly, in the floats given, and counts 19), the gain of the optimal
analysis over the classical one (359/26 = 13.8×; 359/92 = 3.9× over the range reading), and saves
the figure of ε against k under every analysis (``sdp.plots.capacity``) to
``examples/capacity.png``, or to the path given as first argument.

Run: ``python examples/capacity.py [OUTPUT.png]`` (about 5 s).
"""

from __future__ import annotations

import sys
from decimal import ROUND_FLOOR, Decimal
from pathlib import Path

import sharpdp as sdp
from sharpdp.plots.capacity import capacities

EPSILON0 = 0.025
BUDGET = sdp.ApproxDP(1.0, 1e-6)
KS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]  # the k drawn (counts are exact: bisection)


def ratio(a: int, b: int, places: int) -> Decimal:
    """a/b rounded down to ``places`` decimals, exactly (a gain is never overstated)."""
    return (Decimal(a) / Decimal(b)).quantize(Decimal(1).scaleb(-places), rounding=ROUND_FLOOR)


def main(output: Path) -> None:
    mechanism = sdp.Exponential(EPSILON0, monotonic=True)
    sensitivity = sdp.PureDP(2 * EPSILON0)  # McSherry–Talwar's reading of exp(ε0·q), Δ = 1
    classical = capacities(sensitivity, BUDGET, KS).fits
    sharp = capacities(mechanism, BUDGET, KS, adaptive=False).fits
    rows = [
        ("classical: 0.05-DP (sensitivity)", "basic composition", classical["basic"]),
        ("", "advanced composition", classical["advanced"]),
        ("", "optimal for ε-DP (KOV)", classical["kov"]),
        ("classical: 0.025-DP (range)", "basic composition", sharp["basic"]),
        ("", "advanced composition", sharp["advanced"]),
        ("", "optimal for ε-DP (KOV)", sharp["kov"]),
        ("bounded range: 0.025-BR", "zCDP, ρ ≤ ε0²/8 each", sharp["zcdp"]),
        ("", "exact Rényi curve (RDP)", sharp["rdp"]),
        ("", "optimal, non-adaptive (DDR20)", sharp["ddr20"]),
    ]
    print(f"How many {mechanism!r} fit {BUDGET!r}:")
    print(f"  {'reading':<34} {'analysis':<30} {'k':>4}")
    for reading, analysis, k in rows:
        print(f"  {reading:<34} {analysis:<30} {k:>4}")
    best, worst, by_range = sharp["ddr20"], classical["kov"], sharp["kov"]
    assert best is not None
    assert worst is not None
    assert by_range is not None
    print(
        f"optimal composition of bounded range: {best} mechanisms, "
        f"{ratio(best, worst, 1)}× the {worst} of the classical analysis "
        f"({ratio(best, by_range, 1)}× the {by_range} of the range reading)"
    )
    figure = sdp.plots.capacity(mechanism, BUDGET, KS, adaptive=False)
    sdp.plots.save(figure, output, dpi=100)
    print(f"figure: {output}")


if __name__ == "__main__":
    here = Path(__file__).resolve().parent
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else here / "capacity.png")
