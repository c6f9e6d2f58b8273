"""rankkit: learning to rank with gradient boosting."""

__version__ = "0.1.0"

__all__ = ["__version__"]
