from ctxtool.cli import main

main()
