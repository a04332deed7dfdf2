"""``python -m caddie`` runs the command line."""

from caddie.cli import main

raise SystemExit(main())
