import sys

from fastlab.cli import main

sys.exit(main())
