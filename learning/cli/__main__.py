"""``python -m learning.cli``: the ``collabecon`` command line."""

import sys

from learning.cli import main

sys.exit(main())
