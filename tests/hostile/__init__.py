"""A corpus of hostile inputs of the ``collabecon`` command line, and its runner.

Every case (:mod:`tests.hostile.corpus`) is an argument vector, the files it builds, and the
endings that are good for it (:mod:`tests.hostile.case`); the runner
(:mod:`tests.hostile.runner`) runs each as ``python -m collabecon ...`` in a subprocess under a
time-out and classifies the ending as clean, traceback, hang, silent (exit 0 with a wrong
output) or wrong-status. ``python -m tests.hostile --jobs 2`` runs them all and prints a table
of counts and the cases that did not end clean.
"""
