chunks = []
while True:
    chunks.append(bytes(10 ** 8))  # calloc: address space grows without touching pages
