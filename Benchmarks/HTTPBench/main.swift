print("$b: not written yet")
