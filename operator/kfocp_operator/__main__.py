import sys

from kfocp_operator.main import main

sys.exit(main())
