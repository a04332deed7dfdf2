"""caddie: a coding agent for the terminal, with a second shot (mulligan) and a finish line (goal).

Importing caddie does nothing: no files are created and nothing is printed.
"""

import logging

__version__ = "0.1.0"

# A library stays quiet unless its application configures logging (the CLI does, per mode).
logging.getLogger("caddie").addHandler(logging.NullHandler())
