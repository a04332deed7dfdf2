"""A stand-in for the user's browser (``$BROWSER``, as Python's ``webbrowser`` runs it): opens the URL and
follows redirects to the end, like a user who clicks "Allow" on an authorization page."""

import sys
import urllib.request

with urllib.request.urlopen(sys.argv[1], timeout=30) as response:
    response.read()
