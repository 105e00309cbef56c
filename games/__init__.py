"""Games, dynamics and mechanisms of collaborative learning.

``games`` builds on ``econ`` with numpy and networkx; it never imports torch or ``learning``.
"""
