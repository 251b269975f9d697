VACUUM INTO '{CANARY_DIR}/copy.sqlite'
