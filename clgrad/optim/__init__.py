"""clgrad.optim."""
