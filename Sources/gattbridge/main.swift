print("gattbridge")
