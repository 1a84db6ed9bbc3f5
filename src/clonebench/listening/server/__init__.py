"""``clonebench listening-serve``: a listening test that collects its own ratings.

tokens (rater and admin tokens: unguessable, stored as SHA-256 only) -> store (SQLite: WAL, one transaction per
answer, a versioned schema, one server per database by an flock) -> export (the per-rater ratings files
``listening-results`` reads) -> app (the FastAPI app: the site's files, the rater API, the admin view)."""
