print("proxima")
