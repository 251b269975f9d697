import signal, time
signal.alarm(1)
time.sleep(5)
