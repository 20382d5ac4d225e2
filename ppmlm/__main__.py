"""`python -m ppmlm`: the `ppmlm` command, for environments where its script is not on PATH."""
import sys

from ppmlm.cli import main

sys.exit(main())
