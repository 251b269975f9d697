import os
os.chdir('/')
open('lever_pwned', 'w').write('x')
