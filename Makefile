# Common tasks; each target is the one command the README and docs give for it.
.PHONY: test verify reproduce-quick bench lint

test:
	python -m pytest

verify:
	unmix verify all

reproduce-quick:
	unmix reproduce zimmermann-table1 --budget quick

bench:
	unmix bench

lint:
	ruff check src tests && lint-imports
