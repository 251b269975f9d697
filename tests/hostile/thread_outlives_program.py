import threading, time
def spin():
    while True:
        time.sleep(0.01)
threading.Thread(target=spin).start()
answer = 1
