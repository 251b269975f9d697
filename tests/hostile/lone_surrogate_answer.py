answer = '\ud800'
