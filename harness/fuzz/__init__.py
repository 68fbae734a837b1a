"""`python -m harness fuzz`: a family's generated configurations (its FuzzSpace) through a backend,
each distinct failure shrunk to a minimal --cases-file entry. A tool beside reduce and bisect;
the families supply only their parameter spaces."""
