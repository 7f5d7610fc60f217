package aesgcm

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"strings"
)

// A key file holds one key per line, each the standard base64 of KeySize
// random bytes (head -c 32 /dev/urandom | base64). The first key seals new
// payloads; the lines after it are older keys, kept to open what they
// sealed. Blank lines and lines starting with '#' are ignored, and so is
// anything after the key on its line (a note: "2026-12 rotation").
//
//	# mcpledger ledger keys: the first one seals
//	<44 base64 characters>  2026-12
//	<44 base64 characters>  2026-06, until rekeyed

// ParseKeyFile reads the keys of a key file's contents. Errors name the
// line, never the key.
func ParseKeyFile(data []byte) (*Keyring, error) {
	var keys [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		field, _, _ := strings.Cut(line, " ")
		field, _, _ = strings.Cut(field, "\t")
		raw, err := base64.StdEncoding.DecodeString(field)
		if err != nil {
			return nil, fmt.Errorf("aesgcm: line %d is not a base64 key; each line holds one (head -c 32 /dev/urandom | base64)", n)
		}
		if len(raw) != KeySize {
			return nil, fmt.Errorf("aesgcm: line %d holds %d bytes; a key is %d random bytes (head -c 32 /dev/urandom | base64)", n, len(raw), KeySize)
		}
		keys = append(keys, raw)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("aesgcm: reading the key file: %w", err)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("aesgcm: the key file holds no key; add a line made by: head -c 32 /dev/urandom | base64")
	}
	return New(keys...)
}

// LoadKeyFile reads the key file at path.
func LoadKeyFile(path string) (*Keyring, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("aesgcm: cannot read the key file: %w; check the path and that this user may read it", err)
	}
	k, err := ParseKeyFile(data)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return k, nil
}
