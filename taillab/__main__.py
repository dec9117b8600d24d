"""``python -m taillab SCENARIO``: the same as ``tailcc lab SCENARIO``."""

import sys

from taillab.cli import main

sys.exit(main())
