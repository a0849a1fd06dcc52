"""The wild suite: programs written as users write them, exported the way users export
them (tests/wild/run_wild.py runs them and tabulates what happened)."""
