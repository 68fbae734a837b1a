"""`python -m harness bisect`: the first version of a package (or the first of a list of source
builds) at which a case fails with its bad signature. The versions (versions.py), the cached
environments they are probed in (environments.py), and the command (command.py)."""
