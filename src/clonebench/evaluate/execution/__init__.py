"""How scoring runs: devices, precision and the CUDA stack, threads, the CPU process pool and the ECAPA embedding
workers, one-thread exact convolutions, overlapping scorer groups, chunks of items, the metric cache and the durable
progress record. Imports evaluate/protocols/ only."""
