"""The physics-informed network: Fourier-feature MLPs, PDE forms, the training problem, the step and its scan."""
