"""`python -m fsdpsim ARGS`: the fsdpsim program."""
import sys

from fsdpsim import main

sys.exit(main())
