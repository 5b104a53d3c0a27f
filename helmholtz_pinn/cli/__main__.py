import sys

from helmholtz_pinn.cli.commands import main

sys.exit(main())
