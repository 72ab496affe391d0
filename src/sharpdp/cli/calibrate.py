"""``sharpdp calibrate MECHANISM --target ...``: the least noise that meets a privacy target, and
what the classical rule would have used.

The least noise comes from :func:`sharpdp.calibrate` (certified bisection on the mechanism's exact
characterisation, verified on the result). The classical rules, for comparison:

* Gaussian, (ε, δ): σ = Δ√(2 ln(1.25/δ))/ε [Dwork–Roth 2014, Thm A.1], proved only for ε < 1 (the
  output says so when ε ≥ 1); ρ-zCDP: σ = Δ/√(2ρ) [Bun–Steinke 2016, Prop 1.6]; μ-GDP: σ = Δ/μ
  [Dong–Roth–Su 2019] (these two are tight already);
* Laplace, ε or (ε, δ): b = Δ/ε [Dwork–McSherry–Nissim–Smith 2006] (δ unused); ρ-zCDP: through
  ε-DP ⇒ ε²/2-zCDP [Bun–Steinke 2016, Prop 1.4], b = Δ/√(2ρ);
* exponential mechanism and permute-and-flip, ε or (ε, δ): the sensitivity-based reading
  P ∝ exp(c·q) is 2cΔ-DP [McSherry–Talwar 2007, Thm 6], ignoring δ and, for monotone scores, that
  their range is Δ (so ε/2 there); ρ-zCDP: ε = √(2ρ) through ε²/2; top-k: the same per round with
  basic composition over the k rounds; randomized response: ε, or √(2ρ).

A printed noise parameter is rounded towards more noise (σ and scales up, ε down), so it still
meets the target; ``--json`` carries full precision.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any

import typer
from rich.markup import escape

import sharpdp as sdp
from sharpdp._format import lower, upper
from sharpdp.cli._common import Digits, app, console, emit_json, parse_guarantee, working

__all__ = ["Classical", "Family", "calibrate", "classical_rule"]


class Family(StrEnum):
    """The mechanism families ``sharpdp calibrate`` tunes."""

    GAUSSIAN = "gaussian"
    LAPLACE = "laplace"
    DISCRETE_GAUSSIAN = "discrete-gaussian"
    DISCRETE_LAPLACE = "discrete-laplace"
    EXPONENTIAL = "exponential"
    PERMUTE_AND_FLIP = "permute-and-flip"
    TOPK = "topk"
    RR = "rr"


def _class(family: Family) -> type[sdp.Guarantee]:
    classes: dict[Family, type[sdp.Guarantee]] = {
        Family.GAUSSIAN: sdp.Gaussian,
        Family.LAPLACE: sdp.Laplace,
        Family.DISCRETE_GAUSSIAN: sdp.DiscreteGaussian,
        Family.DISCRETE_LAPLACE: sdp.DiscreteLaplace,
        Family.EXPONENTIAL: sdp.Exponential,
        Family.PERMUTE_AND_FLIP: sdp.PermuteAndFlip,
        Family.TOPK: sdp.TopK,
        Family.RR: sdp.RandomizedResponse,
    }
    return classes[family]


#: The parameter each family's calibration sets, and its symbol.
PARAMETERS = {
    Family.GAUSSIAN: ("sigma", "σ"),
    Family.DISCRETE_GAUSSIAN: ("sigma", "σ"),
    Family.LAPLACE: ("scale", "b"),
    Family.DISCRETE_LAPLACE: ("scale", "b"),
}


@dataclass(frozen=True)
class Classical:
    """The classical rule's noise parameter for a target.

    Attributes:
        value: the parameter (σ, scale, or ε), or ``None`` when no classical rule applies.
        rule: the rule and its reference.
        valid: whether the rule's theorem covers this target (Dwork–Roth Thm A.1 needs ε < 1).
        note: why it does not apply, or why it is not valid.
    """

    value: float | None
    rule: str
    valid: bool = True
    note: str = ""


_GAUSS = "σ = Δ√(2 ln(1.25/δ))/ε (Dwork–Roth 2014, Thm A.1)"


def classical_rule(
    family: Family, target: sdp.Guarantee, sensitivity: float, k: int, monotonic: bool
) -> Classical:
    """The classical rule's parameter for ``family`` at ``target`` (see the module docstring).

    Example:
        >>> import sharpdp as sdp
        >>> c = classical_rule(Family.GAUSSIAN, sdp.ApproxDP(0.5, 1e-5), 1.0, 1, False)
        >>> round(c.value, 4), c.valid
        (9.6896, True)
    """
    pure = target.epsilon_ if isinstance(target, sdp.PureDP | sdp.ApproxDP) else None
    rho = target.rho if isinstance(target, sdp.ZCDP) and target.xi == 0.0 else None
    if family in (Family.GAUSSIAN, Family.DISCRETE_GAUSSIAN):
        if isinstance(target, sdp.ApproxDP) and family is Family.GAUSSIAN:
            e, d = target.epsilon_, target.delta_
            if e == 0.0 or d == 0.0:
                return Classical(None, _GAUSS, False, "no Gaussian is (ε, δ)-DP with ε or δ = 0")
            if e >= 1.0:  # the formula's value, flagged: the theorem does not cover it
                sigma = sensitivity * math.sqrt(2.0 * math.log(1.25 / d)) / e
                note = f"Thm A.1 is proved only for ε < 1, not ε = {e!r}"
                return Classical(sigma, _GAUSS, False, note)
            from sharpdp.accounting.calibration import classical_gaussian_sigma

            return Classical(classical_gaussian_sigma(e, d, sensitivity), _GAUSS)
        if rho is not None and rho > 0.0:
            theorem = "Bun–Steinke 2016 Prop 1.6" if family is Family.GAUSSIAN else "CKS20 Thm 4"
            return Classical(sensitivity / math.sqrt(2.0 * rho), f"σ = Δ/√(2ρ) ({theorem})")
        if isinstance(target, sdp.GDP) and family is Family.GAUSSIAN and target.mu > 0.0:
            return Classical(sensitivity / target.mu, "σ = Δ/μ (Dong–Roth–Su 2019)")
        return Classical(None, "", False, f"no classical rule for {target!r}")
    if family in (Family.LAPLACE, Family.DISCRETE_LAPLACE):
        if pure is not None and pure > 0.0:
            return Classical(
                sensitivity / pure, "b = Δ/ε (Dwork–McSherry–Nissim–Smith 2006; δ unused)"
            )
        if rho is not None and rho > 0.0:
            return Classical(
                sensitivity / math.sqrt(2.0 * rho),
                "b = Δ/ε with ε-DP ⇒ ε²/2-zCDP (Bun–Steinke 2016, Prop 1.4): b = Δ/√(2ρ)",
            )
        return Classical(None, "", False, f"no classical rule for {target!r}")
    # the ε of selection mechanisms and randomized response: their classical ε-DP reading
    if pure is not None:
        epsilon, why = pure, "ε-DP as the target's ε (δ unused)"
    elif rho is not None:
        epsilon, why = math.sqrt(2.0 * rho), "ε = √(2ρ) through ε-DP ⇒ ε²/2-zCDP (BS16 Prop 1.4)"
    else:
        return Classical(None, "", False, f"no classical rule for {target!r}")
    if family is Family.RR:
        return Classical(epsilon, f"randomized response is ε-DP; {why}")
    rounds = k if family is Family.TOPK else 1
    factor = 2.0 if monotonic else 1.0
    rule = (
        "P ∝ exp(c·q) is 2cΔ-DP (McSherry–Talwar 2007 Thm 6, by sensitivity"
        + ("; monotone scores' range Δ unused, so ε/2" if monotonic else "")
        + ")"
        + (f", {rounds} rounds by basic composition" if rounds > 1 else "")
        + f"; {why}"
    )
    return Classical(epsilon / (factor * rounds), rule)


@app.command()
def calibrate(
    mechanism: Annotated[Family, typer.Argument(help="the mechanism family")],
    target: Annotated[
        str,
        typer.Option(help="the privacy to meet: pure:ε, approx:ε,δ, zcdp:ρ or gdp:μ"),
    ],
    sensitivity: Annotated[
        float, typer.Option(help="Δ of the query (an integer for the discrete mechanisms)")
    ] = 1.0,
    k: Annotated[int | None, typer.Option("--k", help="topk: how many keys it releases")] = None,
    monotonic: Annotated[
        bool, typer.Option("--monotonic", help="selection: the scores are monotone (counts)")
    ] = False,
    categories: Annotated[
        int | None,
        typer.Option(help="rr: the number of categories  [default: 2]", min=2, show_default=False),
    ] = None,
    digits: Digits = 6,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON (full precision)")] = False,
) -> None:
    """The least noise that meets a privacy target, beside the classical rule's.

    Example: sharpdp calibrate gaussian --target approx:1,1e-6   (σ = 4.22468; classical 5.30)
    """
    goal = parse_guarantee(target, "--target", ("pure", "approx", "zcdp", "gdp"))
    fixed: dict[str, Any] = {}
    if mechanism is Family.TOPK:
        if k is None:
            raise typer.BadParameter("--k: topk needs --k, the number of keys it releases")
        fixed["k"] = k
    elif k is not None:
        raise typer.BadParameter(f"--k applies to topk, not {mechanism.value}")
    if monotonic:
        if mechanism not in (Family.EXPONENTIAL, Family.PERMUTE_AND_FLIP, Family.TOPK):
            raise typer.BadParameter(f"--monotonic applies to selection, not {mechanism.value}")
        fixed["monotonic"] = True
    if mechanism is Family.RR:
        fixed["categories"] = 2 if categories is None else categories
    elif categories is not None:
        raise typer.BadParameter(f"--categories applies to rr, not {mechanism.value}")
    delta_sensitivity: float = sensitivity
    if mechanism in (Family.DISCRETE_GAUSSIAN, Family.DISCRETE_LAPLACE):
        if not float(sensitivity).is_integer():
            raise typer.BadParameter(
                f"--sensitivity: {mechanism.value} takes an integer sensitivity, got {sensitivity!r}"
            )
        delta_sensitivity = int(sensitivity)
    with working(f"calibrating {mechanism.value}"):
        result = sdp.calibrate(_class(mechanism), goal, delta_sensitivity, **fixed)
    name, symbol = PARAMETERS.get(mechanism, ("epsilon", "ε"))
    value = float(getattr(result, "epsilon_" if name == "epsilon" else name))
    classical = classical_rule(mechanism, goal, sensitivity, k or 1, monotonic)
    more_noise_up = name != "epsilon"
    ratio = None
    if classical.value is not None and value > 0.0 and classical.value > 0.0:
        ratio = classical.value / value if more_noise_up else value / classical.value
    if as_json:
        emit_json(
            {
                "mechanism": mechanism.value,
                "target": repr(goal),
                "sensitivity": sensitivity,
                "parameter": name,
                "value": value,
                name: value,
                "result": repr(result),
                "classical": None
                if classical.value is None
                else {
                    "value": classical.value,
                    "rule": classical.rule,
                    "valid": classical.valid,
                    "note": classical.note,
                },
                "noise_ratio": ratio,
            }
        )
        return
    rounded = upper if more_noise_up else lower
    toward = "up" if more_noise_up else "down"
    console.print(
        f"{escape(repr(goal))}, sensitivity {sensitivity!r}: least noise "
        f"[bold]{symbol} = {rounded(value, digits)}[/bold] (exact characterisation, rounded "
        f"{toward}: {escape(repr(result))})",
        highlight=False,
    )
    if classical.value is None:
        console.print(f"classical rule: none ({escape(classical.note)})", highlight=False)
        return
    line = (
        f"classical rule: {symbol} = {rounded(classical.value, digits)} by {escape(classical.rule)}"
    )
    if not classical.valid:
        line += f" [yellow]— not a valid guarantee here: {escape(classical.note)}[/yellow]"
    console.print(line, highlight=False)
    # a ratio of two noise levels, not a bound: to nearest (rounded down, σ = Δ/√(2ρ) against
    # the same σ found by the search, 1 − 1e-12, read "0.999×")
    if ratio is not None and f"{ratio:.3g}" != "1":
        console.print(f"the classical rule uses {ratio:.3g}× the noise", highlight=False)
