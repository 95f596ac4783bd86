"""vkverify: a model checker and test driver for Vulkan compute synchronization."""

__version__ = "0.1.0"
