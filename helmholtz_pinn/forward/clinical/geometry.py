"""Where a case's regions are: targets, the organ, the background's gradient, and the
true modulus ``mu(x, f) = sum_r s_r(x) chi_r(x) mu_r(f)`` over the regions r."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from helmholtz_pinn import laws
from helmholtz_pinn.forward.clinical.case import ClinicalCase, Organ, extent


def _rotation(angles: Sequence[float]) -> np.ndarray:
    """``R = R_z(c) R_y(b) R_x(a)`` for ``angles = (a, b, c)`` rad."""
    a, b, c = angles
    rx = np.array([[1, 0, 0], [0, math.cos(a), -math.sin(a)], [0, math.sin(a), math.cos(a)]])
    ry = np.array([[math.cos(b), 0, math.sin(b)], [0, 1, 0], [-math.sin(b), 0, math.cos(b)]])
    rz = np.array([[math.cos(c), -math.sin(c), 0], [math.sin(c), math.cos(c), 0], [0, 0, 1]])
    return rz @ ry @ rx


def _body_coordinates(x: np.ndarray, centre: np.ndarray, semi_axes, angles) -> np.ndarray:
    """Points ``x`` (3, ...) m in the unit-sphere frame of an ellipsoid: ``R^T (x - c) / a``."""
    d = x - centre.reshape(3, *[1] * (x.ndim - 1))
    body = np.tensordot(_rotation(angles).T, d, axes=1)
    return body / np.asarray(semi_axes, float).reshape(3, *[1] * (x.ndim - 1))


def region_labels(case: ClinicalCase, x: np.ndarray) -> np.ndarray:
    """Region at points ``x`` (3, ...) m: 1 background, ``2 + i`` inside target ``i`` (later
    targets win)."""
    out = np.ones(x.shape[1:], np.int64)
    box = extent(case)
    for label, t in enumerate(case.targets, start=2):
        p = _body_coordinates(x, np.asarray(t.centre) * box, t.semi_axes, t.angles)
        out[(p**2).sum(axis=0) <= 1.0] = label
    return out


def _exponents(degree: int) -> np.ndarray:
    """Exponents (a, b, c) of the monomials ``n_x^a n_y^b n_z^c`` of degree 1..``degree``."""
    e = [
        (a, b, k - a - b)
        for k in range(1, degree + 1)
        for a in range(k + 1)
        for b in range(k - a + 1)
    ]
    return np.array(e)


def _directions(count: int = 2000) -> np.ndarray:
    """``count`` nearly uniform unit vectors (3, count) (a Fibonacci sphere)."""
    k = np.arange(count) + 0.5
    z, phi = 1 - 2 * k / count, math.pi * (1 + math.sqrt(5)) * k
    r = np.sqrt(1 - z**2)
    return np.stack([r * np.cos(phi), r * np.sin(phi), z])


def _monomials(n: np.ndarray, exponents: np.ndarray) -> np.ndarray:
    """Monomials of the directions ``n`` (3, ...): ``(terms, ...)``."""
    return np.stack([n[0] ** a * n[1] ** b * n[2] ** c for a, b, c in exponents])


def _radius_coefficients(organ: Organ) -> tuple[np.ndarray, np.ndarray]:
    """(exponents, coefficients) of the radius perturbation ``p(n)``: standard normal draws
    from ``organ.seed``, scaled so that ``max |p| = roughness`` over the unit sphere."""
    e = _exponents(organ.degree)
    c = np.random.default_rng(organ.seed).standard_normal(len(e))
    peak = np.abs(np.tensordot(c, _monomials(_directions(), e), axes=1)).max()
    return e, c * organ.roughness / peak


def organ_mask(case: ClinicalCase, x: np.ndarray) -> np.ndarray:
    """True at points ``x`` (3, ...) m inside the organ: ``|q| <= 1 + p(q / |q|)`` with
    ``q = (x - c) / a`` (:class:`Organ`)."""
    organ = case.organ
    q = _body_coordinates(x, np.asarray(organ.centre) * extent(case), organ.semi_axes, (0, 0, 0))
    r = np.sqrt((q**2).sum(axis=0))
    e, c = _radius_coefficients(organ)
    n = q / np.where(r > 0, r, 1.0)
    return r <= 1.0 + np.tensordot(c, _monomials(n, e), axes=1)


def background_scale(case: ClinicalCase, x: np.ndarray) -> np.ndarray:
    """``s(x) = 1 + sum_k g_k (x_k / L_k - 1/2)`` at points ``x`` (3, ...) m."""
    g, box = np.asarray(case.gradient, float), extent(case)
    return 1.0 + sum(g[k] * (x[k] / box[k] - 0.5) for k in range(3))


def region_laws(case: ClinicalCase) -> tuple[tuple, ...]:
    """The law parameters of region ``r`` at index ``r - 1``."""
    return (case.background, *(t.law for t in case.targets))


def _coefficients(case: ClinicalCase, x: np.ndarray) -> list[np.ndarray]:
    """Real ``s_r chi_r`` at points ``x`` for every region r (the background scaled)."""
    labels = region_labels(case, x)
    scale = background_scale(case, x)
    return [
        np.where(labels == r, scale if r == 1 else 1.0, 0.0)
        for r in range(1, 2 + len(case.targets))
    ]


def modulus(case: ClinicalCase, x: np.ndarray, frequency: float) -> np.ndarray:
    """True complex modulus ``mu(x, f)`` (Pa) at points ``x`` (3, ...) m and ``frequency`` Hz."""
    parts = zip(region_laws(case), _coefficients(case, x), strict=True)
    return sum(laws.modulus(law, frequency) * c for law, c in parts)
