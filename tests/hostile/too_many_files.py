files = [open('/dev/null') for _ in range(10000)]
