"""reasonix benchmarks: ``python -m bench`` prints the figures the README quotes (see
DESIGN.md, "Performance budgets"). Benchmarks print; tests never assert on timings."""
