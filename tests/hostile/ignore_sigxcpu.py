import signal
signal.signal(signal.SIGXCPU, signal.SIG_IGN)
x = 0
while True:
    x += 1
