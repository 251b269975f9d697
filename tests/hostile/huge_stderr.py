import sys
while True:
    sys.stderr.write('y' * 1000)
