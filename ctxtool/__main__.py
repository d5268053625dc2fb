from ctxtool.launch import main

if __name__ == "__main__":  # not when a worker process imports it as its main module
    main()
