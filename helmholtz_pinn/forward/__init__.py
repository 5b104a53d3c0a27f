"""Forward models with known answers: the scalar finite-difference Helmholtz solver, the
elastic finite-element solver and the built-in phantoms.
"""
