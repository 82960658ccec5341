#!/usr/bin/env bash
# Install wlmap under PREFIX (default /usr/local):
#   PREFIX/bin/wlmap                      the binary (cargo install --locked --path crates/cli)
#   PREFIX/bin/kubectl-wlmap              a link to it: kubectl runs it as `kubectl wlmap`
#   PREFIX/share/man/man1/wlmap*.1        manual pages (wlmap.1, one per command)
#   PREFIX/share/bash-completion/completions/wlmap, .../zsh/site-functions/_wlmap,
#   PREFIX/share/fish/vendor_completions.d/wlmap.fish
# WLMAP_BINARY=PATH installs that built binary instead of building one.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix="${1:-/usr/local}"
if [ -n "${WLMAP_BINARY:-}" ]; then
  install -D -m 0755 "$WLMAP_BINARY" "$prefix/bin/wlmap"
else
  cargo install --locked --path crates/cli --root "$prefix"
fi
ln -sf wlmap "$prefix/bin/kubectl-wlmap"
"$prefix/bin/wlmap" man "$prefix/share/man/man1"
for shell in bash zsh fish; do
  case $shell in
    bash) file="$prefix/share/bash-completion/completions/wlmap" ;;
    zsh) file="$prefix/share/zsh/site-functions/_wlmap" ;;
    fish) file="$prefix/share/fish/vendor_completions.d/wlmap.fish" ;;
  esac
  mkdir -p "$(dirname "$file")"
  "$prefix/bin/wlmap" completion "$shell" > "$file"
done
echo "installed wlmap $("$prefix/bin/wlmap" --version | cut -d' ' -f2-) under $prefix"
