"""caddie: a coding agent for the terminal, with a second shot (mulligan) and a finish line (goal).

Importing caddie does nothing: no files are created and nothing is printed.
"""

__version__ = "0.1.0"
