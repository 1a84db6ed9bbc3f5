"""Cloning-server protocols. One file per backend; each registered lazily by 'module:object'."""
