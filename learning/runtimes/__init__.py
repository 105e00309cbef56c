"""Where runs execute besides one process: ``flower`` (collabecon's algorithms and
mechanisms as Flower federations, simulated or deployed) and ``sweep`` (grids of training
runs in a process pool or on Ray).
"""
