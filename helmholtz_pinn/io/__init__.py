"""Input: datasets and their validation, scanner readers (MAT, NIfTI), conversion,
presets of known exports, tissue masks. No JAX.
"""
