"""The package's own suite: the plugin is loaded from its installed entry point;
`pytester` runs inner sessions for the tests of the plugin's wiring."""

pytest_plugins = ["pytester"]
