"""Generation: journaled, resumable, concurrent requests to a cloning server."""
