"""vkverify: a model checker and test driver for Vulkan compute synchronization."""

__all__ = ["__version__"]

__version__ = "0.1.0"
