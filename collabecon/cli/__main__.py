"""``python -m collabecon.cli``: the ``collabecon`` command line."""

import sys

from collabecon.cli import main

sys.exit(main())
