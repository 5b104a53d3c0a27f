"""Numpy assessment without the PINN: stencils, classical baselines, metrics, clinical quantities, input and fit checks."""
