import sys
for name in list(sys.modules):
    if name not in ('sys', 'builtins'):
        sys.modules[name] = None
answer = 3
