"""One file per scorer backend."""
