import ctypes, os
rt = ctypes.CDLL("librt.so.1", use_errno=True)
rt.mq_open.restype = ctypes.c_int
mq = rt.mq_open(b"/lever-hostile", os.O_CREAT | os.O_RDWR, 0o666, None)
answer = 1 if mq >= 0 else 0
