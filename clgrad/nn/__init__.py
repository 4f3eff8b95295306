"""clgrad.nn."""
