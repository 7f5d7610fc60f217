module github.com/mcpledger/mcpledger/ledger/redact/internal/gitleaks/gen

go 1.25.0

require github.com/BurntSushi/toml v1.6.0
