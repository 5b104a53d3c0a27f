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


def test_the_laws_auto_tries_come_from_the_registry():
    assert laws.ORDER == ("springpot", "voigt")
    assert set(laws.LAWS) == {"springpot", "voigt", "springpot-dashpot"}
    assert laws.ONE_FREQUENCY == "per-frequency"


def test_the_line_names_the_law_and_the_spreads():
    line = laws.describe("voigt", {"springpot": 0.0093, "voigt": 0.0013})
    assert line.startswith("law: voigt, chosen by the data")
    assert "springpot 0.93%" in line and "voigt 0.13%" in line
    timed = laws.describe("voigt", {"springpot": 0.0093, "voigt": 0.0013}, 65.2)
    assert timed.startswith(line) and timed.endswith(
        "2 fits in 65 s: mu_model=voigt fits this law alone"
    )
    assert laws.describe("voigt", {"voigt": 0.0013}, 30.0) == laws.describe(
        "voigt", {"voigt": 0.0013}
    )
