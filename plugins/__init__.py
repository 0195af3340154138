"""The built-in plugins of dcbench: ordinary plugins, registered through the
same hooks a third-party package implements."""
