"""First fit, published as a dcbench plugin."""
