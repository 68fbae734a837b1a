# Loads the harness plugin when running from a checkout, whether or not it is pip-installed
# (the entry point has the same name, so pytest registers it once).
pytest_plugins = ["harness.plugin"]
