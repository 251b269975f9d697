import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
IPC_CREAT = 0o1000
key = 0x1E7E
shm = libc.shmget(key, 1 << 20, IPC_CREAT | 0o666)   # a shared-memory segment
addr = ctypes.c_void_p(libc.shmat(shm, None, 0))
ctypes.memmove(addr, b"message for another program", 27)
msq = libc.msgget(key, IPC_CREAT | 0o666)              # a message queue
sem = libc.semget(key, 1, IPC_CREAT | 0o666)           # a semaphore set
answer = 1 if min(shm, msq, sem) >= 0 else 0
