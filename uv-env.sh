# Source me (`. ./uv-env.sh`) before the README's commands: it makes sure uv exists and
# gives it the settings this project's machines need. Nothing here names a machine path:
# the wheel folder with the CPU build of torch is read from pip's own configuration.
if ! command -v uv >/dev/null 2>&1; then
  python3 -m pip install --quiet "uv>=0.5" || return 1 2>/dev/null || exit 1
fi
if command -v pip >/dev/null 2>&1; then
  _awm_find_links="$(pip config get global.find-links 2>/dev/null || true)"
  [ -n "$_awm_find_links" ] && export UV_FIND_LINKS="$_awm_find_links"
  unset _awm_find_links
fi
export UV_SYSTEM_CERTS=1
export UV_PYTHON_DOWNLOADS=never
