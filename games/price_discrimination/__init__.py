"""The price-discrimination game of Werner (2024), Chapter 4.

One-shot equilibrium, commitment, and repeated play between a learning seller and belief-based
buyers.
"""
