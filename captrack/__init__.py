"""captrack: what post-training did to a language model's existing capabilities."""

__version__ = "0.1.0"

__all__ = ["__version__"]
