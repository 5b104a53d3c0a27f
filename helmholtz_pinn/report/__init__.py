"""What a fit hands back: the result and its run facts, the files of an output folder,
figures and training logs.
"""
