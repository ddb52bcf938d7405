# Aliases for the README's two commands.
.PHONY: evals test setup bench
evals:
	bash scripts/evals.sh
test:
	bash scripts/test.sh
setup:
	bash scripts/setup.sh
bench:
	.venv/bin/python benchmarks/run_all.py
