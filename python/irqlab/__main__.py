"""``python -m irqlab`` is the ``irqlab`` command."""

import sys

from irqlab.cli import main

sys.exit(main())
