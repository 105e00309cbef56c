"""Trained models into the economics.

The seam itself, a run's models -> :class:`econ.qualities.ModelQualities`, is
:mod:`learning.qualities` in the engine core, since every run's result offers it.

- ``defection_free``: two firms that train real models under the schemes of Werner (2024),
  ch. 3, Algorithm 5 included;
- ``privacy_curve``: the measured (epsilon, accuracy) curve of local and federated DP-SGD,
  the input of Tsoy et al.'s utilities;
- ``ipfl``: IP-FL's token economy (Khan et al.) on clients that train real models.
"""
