"""The PyTorch learning backend, and the command line that sits on top of all three layers.

Importing ``learning`` itself does not import torch: the command line (``learning.cli``)
must be able to run ``collabecon verify`` without it. Torch is imported by the modules
that train.
"""
