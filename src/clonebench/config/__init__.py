"""Settings composition: the run's settings from each phase's own slice, Hydra's compose API for commands other
than run_vc.py, and the guard that keeps secrets out of Hydra's own records."""
