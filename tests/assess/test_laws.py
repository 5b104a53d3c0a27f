"""The law rule of ``mu_model="auto"``: a clear springpot is kept, otherwise the laws
are compared and per-frequency moduli taken when neither is consistent; a batch is
judged by its worst member; the log line names the kept law and every spread."""

import math

from helmholtz_pinn.assess import laws


def test_consistent_needs_a_measured_spread_within_the_limit():
    assert laws.consistent(0.0) and laws.consistent(laws.SPREAD_MAX)
    assert not laws.consistent(laws.SPREAD_MAX * 1.01)
    assert not laws.consistent(None)


def test_a_batch_is_judged_by_its_worst_member():
    assert laws.worst([0.01, None, 0.04, math.nan]) == 0.04
    assert laws.worst([None, math.nan]) is None


def test_lines_name_the_law_and_the_spreads():
    line = laws.describe("voigt", {"springpot": 0.061, "voigt": 0.008})
    assert line.startswith("law: voigt, chosen by the data")
    assert "springpot 6.1%" in line and "voigt 0.8%" in line
    neither = laws.describe(
        "per-frequency", {"springpot": 0.05, "voigt": 0.07, "per-frequency": None}
    )
    assert "no law within 2%" in neither
    assert "springpot leaves a spread of 6.1%" in laws.rejected("springpot", 0.061, "voigt")


def _decide(spreads: dict[str, float]) -> tuple[list[str], str]:
    """The laws auto fits, given the spread each would leave, and the one it keeps."""
    tried = {}
    while (law := laws.next_law(tried)) is not None:
        tried[law] = spreads.get(law)
    return list(tried), laws.chosen(tried)


def test_auto_keeps_a_clear_springpot_and_compares_otherwise():
    # measured spreads (docs/records/law/2026-12-03): springpot tissue, Voigt tissue
    assert _decide({"springpot": 0.0005, "voigt": 0.0355}) == (["springpot"], "springpot")
    assert _decide({"springpot": 0.0204, "voigt": 0.0013}) == (["springpot", "voigt"], "voigt")
    # a noisy springpot fit that is not clear still wins the comparison
    assert _decide({"springpot": 0.012, "voigt": 0.05}) == (["springpot", "voigt"], "springpot")
    # neither law describes the data: per-frequency moduli
    tried, kept = _decide({"springpot": 0.04, "voigt": 0.06})
    assert tried == ["springpot", "voigt", "per-frequency"] and kept == "per-frequency"
