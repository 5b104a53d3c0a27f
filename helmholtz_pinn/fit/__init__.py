"""Running a fit: ``invert`` (the entry point), chunks of members, the host loop between
blocks, device placement and memory, checkpoints, the compilation cache.
"""
