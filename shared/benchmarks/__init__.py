"""`make bench`: one table, each row timed in the same run against the real library."""
