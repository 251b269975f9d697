import ctypes
ctypes.string_at(0)
