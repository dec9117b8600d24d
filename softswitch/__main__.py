"""``python -m softswitch`` — same as the ``softswitch`` command."""

import sys

from softswitch.cli import main

sys.exit(main())
