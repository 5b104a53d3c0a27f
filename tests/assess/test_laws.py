"""The law rule of ``mu_model="auto"``: the law of the lower spread is kept (a tie goes
to the springpot); a batch is judged by its worst member; each PDE form has its own
limit for the fit check; the log line names the kept law and every spread."""

import math

from helmholtz_pinn.assess import laws


def test_the_lower_spread_wins_and_a_tie_goes_to_the_springpot():
    # measured (docs/records/law/2026-12-03): 2-D springpot tissue, 3-D Voigt tuning volume
    assert laws.chosen({"springpot": 0.009, "voigt": 0.061}) == "springpot"
    assert laws.chosen({"springpot": 0.0093, "voigt": 0.0013}) == "voigt"
    assert laws.chosen({"springpot": 0.002, "voigt": 0.002}) == "springpot"
    assert laws.chosen({"springpot": None, "voigt": 0.01}) == "voigt"


def test_a_batch_is_judged_by_its_worst_member():
    assert laws.worst([0.01, None, 0.04, math.nan]) == 0.04
    assert laws.worst([None, math.nan]) is None


def test_the_navier_form_has_the_tighter_limit():
    assert laws.spread_limit("navier") < laws.spread_limit("hetero") == laws.spread_limit(None)


def test_the_line_names_the_law_and_the_spreads():
    line = laws.describe("voigt", {"springpot": 0.0093, "voigt": 0.0013})
    assert line.startswith("law: voigt, chosen by the data")
    assert "springpot 0.93%" in line and "voigt 0.13%" in line


def test_one_fit_settles_only_with_a_clear_margin():
    margin = laws.ONE_FIT_MARGIN
    assert laws.settled(0.001, 0.001 * margin)
    assert not laws.settled(0.001, 0.001 * margin * 0.99)
    assert not laws.settled(0.02, 0.001)  # the matched law would hold better
    assert not laws.settled(None, 0.05) and not laws.settled(0.001, math.nan)
    assert not laws.settled(0.0, 0.0)
    assert laws.lowest([0.03, None, 0.01]) == 0.01 and laws.lowest([None]) is None


def test_after_one_fit_the_line_names_the_matched_spread():
    line = laws.describe("springpot", {"springpot": 0.0008}, {"voigt": 0.0061})
    assert "springpot 0.08%" in line and "matched to this fit: voigt 0.61%" in line
    assert "one fit" in line
