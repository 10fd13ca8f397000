"""``python -m rankbench.peers build|status``."""

import sys

from rankbench.peers.build import main

sys.exit(main())
