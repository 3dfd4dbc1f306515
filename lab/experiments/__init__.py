"""One-off experiments behind figures in docs/.

Each runs from the checkout as ``uv run python -m lab.experiments.NAME``.
"""
