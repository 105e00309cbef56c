"""Where runs execute besides one process: ``flower`` and ``sweep``.

``flower`` runs collabecon's algorithms and mechanisms as Flower federations, simulated or
deployed; ``sweep`` runs grids of training runs in a process pool or on Ray.
"""
