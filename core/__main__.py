from dcbench.cli import main

main()
