"""python -m tinspect_export: the command, run by the Python where torch and the model's code live."""
import sys

from .cli import main

sys.exit(main())
