"""The physics-informed network: Fourier-feature MLPs with their derivative jets, the PDE
forms, a dataset as a nondimensional training problem, the step and its scan block.
"""
