"""`python -m lodestar`: the `lodestar` command."""

import sys

from lodestar.cli.main import main

sys.exit(main())
