# Sourced by .ci/run and usable by developers: the uv settings this project's machines need.
# The find-links folder is read from pip's own configuration, never written down here.
if command -v pip >/dev/null 2>&1; then
  _fl="$(pip config get global.find-links 2>/dev/null || true)"
  [ -n "$_fl" ] && export UV_FIND_LINKS="$_fl"
fi
export UV_NATIVE_TLS=1
export UV_PYTHON_DOWNLOADS=never
