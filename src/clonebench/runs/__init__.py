"""What run_vc.py dispatches to: the pipeline (settings -> generate -> evaluate, or a suite) and the merge of
sharded runs."""
