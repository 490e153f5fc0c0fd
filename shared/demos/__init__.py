"""One demo module per stage, `sNN_<name>.py`, each with a `main()` that `make demo` runs."""
