"""Input: datasets, their validation, scanner readers, conversion, presets, masks."""
