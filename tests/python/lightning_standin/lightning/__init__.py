"""A stand-in for the `lightning` package, for culprit's CPU tests where PyTorch Lightning is not installed: only
`lightning.pytorch` (see there). Never installed; the tests put this folder on PYTHONPATH."""
