# Kept for old instructions: the settings live in uv-env.sh at the repository root.
. "$(dirname "${BASH_SOURCE[0]:-$0}")/../uv-env.sh"
