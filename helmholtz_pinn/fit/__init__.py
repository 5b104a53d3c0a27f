"""Running a fit: the inversion entry point, chunks, the host loop, device placement, memory, checkpoints."""
