from dcbench.commands import main

main()
