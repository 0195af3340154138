"""What is simulated: the network, the requests, the allocations and the rules that judge them, and the suites of
scenarios. Pure data and checks, no files and no plugins; it imports only `dcbench.errors`."""
