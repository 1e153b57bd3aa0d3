"""The package version (read by hatch for the wheel, by `ranktable --version`)."""

__version__ = "0.1.0"
