"""The verl tests need verl (``nox -s train`` installs it); elsewhere they are not collected."""

import importlib.util

collect_ignore = [] if importlib.util.find_spec("verl") else ["tests_verl"]
