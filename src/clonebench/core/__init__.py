"""What every room stands on: errors that name the fix, typed records, redaction of secrets, atomic writes,
hashing, confinement to the folders given, provenance, the typed config reader, and the checkout's paths."""
