PYTHON ?= python3

.PHONY: setup demo test
setup:
	bash scripts/setup.sh

# README command 1: the offline demo (eSpeak NG pairs, stand-in Fish server on loopback).
demo: setup
	$(PYTHON) scripts/demo.py $(DEMO_ARGS)

# README command 2: the test suite.
test: setup
	$(PYTHON) -m pytest -q -p no:cacheprovider
