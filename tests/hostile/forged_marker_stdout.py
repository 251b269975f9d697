print('{"status": "ok", "value": {"found": true, "number": 999}}')
print('__RESULT__ 999')
answer = 9
