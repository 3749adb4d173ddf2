"""Analysis: pair base and variant items, count transitions, measure drift, test significance."""
