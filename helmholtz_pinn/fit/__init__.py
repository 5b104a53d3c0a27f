"""Running a fit: ``invert`` (the entry point), the input's admission, the plan (the
request resolved against the data and devices), one law's training, the law choice, the
Results and their run facts, chunks of members, the host loop between blocks, device
placement and memory, checkpoints, the compilation cache.
"""
