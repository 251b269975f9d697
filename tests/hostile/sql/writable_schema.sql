PRAGMA writable_schema = 1
