"""The console's browser tests (a package, so its conftest never shadows Tests/sdk's `conftest` module)."""
