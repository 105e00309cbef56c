"""Performance measurements behind ``collabecon bench`` and ``bench/*.py``.

One module per benchmark; each returns a frozen result with ratios measured in one run
against a straightforward baseline on the same machine.
"""
