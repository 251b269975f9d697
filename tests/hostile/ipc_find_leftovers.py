import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
rt = ctypes.CDLL("librt.so.1", use_errno=True)
key = 0x1E7E
found = [libc.shmget(key, 0, 0) >= 0, libc.msgget(key, 0) >= 0, libc.semget(key, 0, 0) >= 0,
         rt.mq_open(b"/lever-hostile", os.O_RDONLY, 0, None) >= 0]
answer = sum(found)
