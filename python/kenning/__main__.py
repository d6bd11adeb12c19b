from kenning.cli import main

main()
