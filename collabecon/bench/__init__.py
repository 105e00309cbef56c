"""Performance measurements behind ``collabecon bench NAME``.

One module per benchmark, each timing our code against a straightforward baseline on the
same machine in one run, with the one timer of :mod:`collabecon.bench.timing`:

- ``engine`` (:mod:`~collabecon.bench.engine`): batched local SGD vs the per-client loop;
- ``all-pairs`` (:mod:`~collabecon.bench.all_pairs`): one round's all-pairs work, batched
  vs the per-pair loop;
- ``dp`` (:mod:`~collabecon.bench.dp`): batched DP-SGD vs a per-client Opacus loop;
- ``bargaining`` (:mod:`~collabecon.bench.bargaining`): Nash bargaining of the duopoly, batched
  and one call per start;
- ``market`` (:mod:`~collabecon.bench.market`): the Bertrand equilibrium of many firms;
- ``pricing-repeated`` (:mod:`~collabecon.bench.pricing_repeated`): the vectorised repeated PD game;
- ``privacy`` (:mod:`~collabecon.bench.privacy`): optimal protocols and existence tests;
- ``verify`` (:mod:`~collabecon.bench.verify`): the CPU time of ``collabecon verify``;
- ``flower`` (:mod:`~collabecon.bench.flower`): a run in Flower's simulation engine vs in
  process.

``bench/RESULTS.md`` records the figures. :mod:`collabecon.bench.clients` sets up the
clients the engine and DP-SGD benchmarks time; :mod:`collabecon.bench.pricing_baseline` is the
straightforward repeated PD game. This package's ``__init__`` imports nothing heavy, so the
econ benchmarks run without torch.
"""
