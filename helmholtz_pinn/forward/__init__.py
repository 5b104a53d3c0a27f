"""Forward models: the scalar finite-difference solver, the elastic FEM solver, phantoms."""
