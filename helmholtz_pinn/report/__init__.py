"""Results and their files: the typed result, output files, figures, training logs."""
