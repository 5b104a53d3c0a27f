"""Assessment without the network (numpy): finite-difference stencils, the classical
inversions (AHI, curl-MDEV), accuracy metrics, clinical quantities, the checks of a
dataset before a fit and of a fit after it.
"""
